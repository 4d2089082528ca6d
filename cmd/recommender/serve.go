package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/infscale/infscale/cmd/recommender/internal/demo"
	"github.com/infscale/infscale/internal/appendlog"
	"github.com/infscale/infscale/internal/crashlog"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/serve"
	"k8s.io/klog/v2"
)

// The demos' length bounds: below 10 s the zero demo's cold start and
// cooldown round to nothing; past an hour nobody is watching.
const (
	minDemoDuration = 10 * time.Second
	maxDemoDuration = time.Hour
)

// demoFlag names the demo being run, for messages.
func demoFlag(zero bool) string {
	if zero {
		return "--demo-zero"
	}
	return "--demo"
}

// demoIgnored is the first flag given that the demos would ignore (they
// take only --listen, --log-level, --log-format and --demo-duration), or "".
// given: the flags on the command line (a rotation flag alone is named,
// not sent to --audit-log, which the demo refuses next).
func (c *ServeCmd) demoIgnored(given map[string]bool) string {
	for _, f := range []struct {
		set  bool
		name string
	}{
		{c.CheckConfig, "--check-config"},
		{c.StateDir != "", "--state-dir"},
		{c.AuditLog != "", "--audit-log"},
		{given["audit-log-maxsize"], "--audit-log-maxsize"},
		{given["audit-log-maxbackup"], "--audit-log-maxbackup"},
		{given["audit-log-maxage"], "--audit-log-maxage"},
		{given["audit-log-compress"], "--audit-log-compress"},
		{c.Kubeconfig != "", "--kubeconfig"},
		{c.LeaderElect, "--leader-elect"},
	} {
		if f.set {
			return f.name
		}
	}
	return ""
}

// ServeCmd is `infscale serve`: the recommender service (docs/serve.md).
type ServeCmd struct {
	Config           string `name:"config" short:"c" type:"path" placeholder:"FILE" help:"Configuration file (YAML, docs/config.md). Required unless --demo or --demo-zero."`
	Listen           string `name:"listen" placeholder:"ADDR" help:"HTTP address for /metrics, /healthz, /readyz, /debug/decisions; overrides the config's listen."`
	StateDir         string `name:"state-dir" type:"path" placeholder:"DIR" help:"Directory for per-target state (stabilisation history, scale events) so that a restart carries on the windows."`
	AuditLogFlags    `embed:""`
	LogFlags         LogFlags      `embed:""`
	Demo             bool          `name:"demo" help:"Run the quickstart: a simulated vLLM fleet under a load ramp, served in embedded mode, decisions printed as they happen."`
	DemoZero         bool          `name:"demo-zero" help:"Run the scale-to-zero demo: load through the activator to the simulated fleet at zero replicas, serve in embedded mode, the fleet following desired; prints each request's wait beside the cold start, and how many were lost."`
	DemoDuration     time.Duration `name:"demo-duration" default:"60s" help:"Length of --demo (10s to 1h); --demo-zero's cold start and cooldown scale with it (it runs about two thirds of that: 40s at 60s)."`
	CheckConfig      bool          `name:"check-config" help:"Load and validate --config, print a summary and exit (0 valid, 2 invalid)."`
	Kubeconfig       string        `type:"path" placeholder:"FILE" help:"kubeconfig for targets with a scaleTargetRef and for --leader-elect (default: in a pod its service account, else $KUBECONFIG or ~/.kube/config); no client is made without either."`
	LeaderElectFlags `embed:""`
}

// Run loads the config (exit 2 on any problem, nothing served) and serves
// until SIGTERM/interrupt; SIGHUP reloads the config.
func (c *ServeCmd) Run(e *env) (retErr error) {
	log := c.LogFlags.Logger(e.stderr)
	// A panic ends serve with one ERROR record and exit status 2
	// (docs/serve.md), here and in the goroutines serve.Run starts.
	defer crashlog.Handle(log)
	// The same for the reads', writes' and restores' goroutines, and for
	// those client-go guards itself (watches, informer handlers).
	crashlog.SetLogger(log)
	kube.HandleClientPanics()
	if c.Listen != "" {
		if err := config.CheckListen(c.Listen); err != nil {
			return invalidf("--listen %q: %v", c.Listen, err)
		}
	}
	if err := c.needsLeaderElect(e.given); err != nil {
		return err
	}
	if c.LeaderElect {
		if _, err := c.check(); err != nil {
			return err
		}
	}
	if err := needsFlag(e.given, "demo-duration", c.Demo || c.DemoZero, "--demo or --demo-zero"); err != nil {
		return err
	}
	if c.Demo || c.DemoZero {
		switch {
		case c.Demo && c.DemoZero:
			return invalidf("--demo and --demo-zero are two demos; give one")
		case c.Config != "":
			return invalidf("%s runs its own fleet and config; drop --config", demoFlag(c.DemoZero))
		case c.demoIgnored(e.given) != "":
			return invalidf("%s runs its own fleet and config, in memory, alone: %s does not apply to it; drop it", demoFlag(c.DemoZero), c.demoIgnored(e.given))
		case c.DemoDuration < minDemoDuration || c.DemoDuration > maxDemoDuration:
			why := "shorter leaves no room for a cold start and a scale-down"
			if c.DemoDuration > maxDemoDuration {
				why = "a demo, not a service: serve --config runs until stopped"
			}
			return invalidf("--demo-duration %s: want %s to %s, e.g. 60s (%s)", shortDuration(c.DemoDuration), shortDuration(minDemoDuration), shortDuration(maxDemoDuration), why)
		}
		o := demo.DemoOptions{Duration: c.DemoDuration, Listen: c.Listen, Log: demoLogger(e, log, c.LogFlags)}
		if c.DemoZero {
			_, err := demo.RunZeroDemo(e.ctx, e.stdout, o)
			return err
		}
		_, err := demo.RunDemo(e.ctx, e.stdout, o)
		return err
	}
	if err := c.checkRotation(e.given); err != nil {
		return err
	}
	if c.Config == "" {
		return invalidf("--config is required (or --demo for the quickstart)")
	}
	if !c.CheckConfig {
		// Go's fatal errors end in one record too with --log-format
		// json; before the first line is written: as a container's PID 1
		// serve runs again as the monitor's child (crashlog.StartMonitor),
		// which writes the start's lines itself.
		c.LogFlags.monitorCrashes(e.ctx, e.stderr, log)
	}
	cfg, err := loadConfig(c.Config)
	if err != nil {
		return err
	}
	// The start's warnings: plain lines, or with --log-format json WARN
	// records, as every other line then is, shaped as a reload's.
	warn := func(msg string) { fmt.Fprintf(e.stderr, "infscale: warning: %s\n", msg) }
	if c.LogFlags.LogFormat == "json" {
		warn = func(msg string) { log.Warn(msg) }
		serve.LogConfigWarnings(log, cfg)
	} else {
		for _, d := range slices.Concat(cfg.Deprecations, cfg.Warnings) {
			warn(d.Error())
		}
	}
	if c.Kubeconfig != "" && !cfg.Kube() && !c.LeaderElect {
		// Accepted and unused: the replicas and held queries read
		// Prometheus (or the pages), not the API server.
		warn(fmt.Sprintf("--kubeconfig %s is not used: no target of %s has a scaleTargetRef and --leader-elect is off (a reload that adds one uses it)", c.Kubeconfig, c.Config))
	}
	if c.LeaderElect {
		if err := serve.CheckReplicated(cfg); err != nil {
			return invalidf("--leader-elect: %s: %v", c.Config, err)
		}
	}
	if c.CheckConfig {
		mode := "embedded (scraping the replicas)"
		if !cfg.Prometheus.Embedded() {
			mode = "prometheus " + cfg.Prometheus.URL
		}
		if cfg.Kube() {
			mode += ", Kubernetes API for the scaleTargetRef targets"
		}
		pairs := 0
		for _, t := range cfg.Targets {
			if t.Roles != nil {
				pairs++
			}
		}
		of := ""
		if pairs > 0 {
			of = fmt.Sprintf(" (%d of them a prefill/decode pair, 2 pools each)", pairs)
		}
		fmt.Fprintf(e.stdout, "%s: valid: %d target(s)%s, %s, every %s\n", c.Config, len(cfg.Targets), of, mode, cfg.IntervalDuration())
		return nil
	}
	survivePipes() // the daemon from here; --check-config is a one-shot
	if err := checkPathFlags(c.AuditLog, c.StateDir); err != nil {
		return err
	}
	if err := c.checkRotatable(); err != nil {
		return err
	}
	// client-go's retries (informers, discovery, the Lease) in serve's log,
	// not klog's stderr, at most once a minute per message.
	klog.SetSlogLogger(slog.New(kube.ClientLogHandler(log.Handler(), kube.ClientLogEvery)))
	// The listen address is bound before the audit log is opened and the
	// state directory made (serve.Run): a port in use exits 1 with nothing
	// created on disk. serve.Run closes it; so does this on an earlier error.
	ln, err := serve.Listen(cfg, c.Listen)
	if err != nil {
		return err // runtime: exit 1
	}
	defer ln.Close()
	o := serve.Options{ConfigPath: c.Config, Listen: c.Listen, Listener: ln, StateDir: c.StateDir, Version: version(), Log: log, ReplaySize: planReplays,
		Cluster: func() (*kube.Cluster, error) { return kube.Connect(c.Kubeconfig) }}
	// The elector's client too (a bad kubeconfig) fails before the audit
	// log is created.
	if el, err := c.elector(c.Kubeconfig, log); err != nil {
		return err
	} else if el != nil {
		o.Elector, o.IsLeader = el, el.IsLeader
	}
	var audit io.WriteCloser
	if c.AuditLog != "" {
		// A file this start creates and serve leaves empty on an error
		// (the state directory cannot be made, the cluster cannot be
		// reached) is removed: a failed start leaves nothing on disk.
		// Only once opened, its lock held (appendlog): a file absent
		// here that Open finds locked was made in between by another
		// serve, which writes it (removed, that serve's lines went to a
		// file no longer in the directory); and removed before Close
		// releases the lock, so no other serve has taken it meanwhile.
		_, err := os.Lstat(c.AuditLog)
		absent := errors.Is(err, fs.ErrNotExist)
		if beforeAuditOpen != nil {
			beforeAuditOpen()
		}
		// Never blocking serve: a FIFO without a reader is refused, one
		// whose reader stalls drops lines (appendlog).
		f, err := appendlog.Open(c.AuditLog, c.rotation())
		if err != nil {
			return c.auditOpenError(err)
		}
		defer func() {
			if retErr != nil && absent {
				removeIfEmpty(c.AuditLog)
			}
			f.Close()
		}()
		audit = f
	}
	if audit != nil {
		o.Audit = audit
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	o.Reload = hup
	return serve.Run(e.ctx, cfg, o)
}

// checkPathFlags refuses, as usage errors (exit 2, as a missing --config
// or --kubeconfig), path flags that name no usable place: --audit-log in
// a directory that does not exist or under a file, --state-dir that is a
// file or under one, either in a loop of symbolic links. Nothing is created. What the environment refuses
// (permissions, a read-only file system, a FIFO without a reader) is
// found when the path is opened: exit 1.
func checkPathFlags(auditLog, stateDir string) error {
	if auditLog != "" {
		parent := filepath.Dir(auditLog)
		fi, err := os.Stat(parent)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return invalidf("--audit-log %s: directory %s does not exist; create it, or give a file in an existing directory (serve creates the file, not its directory)", auditLog, parent)
		case errors.Is(err, syscall.ENOTDIR) || err == nil && !fi.IsDir():
			return invalidf("--audit-log %s: %s is not a directory; give a file in a directory", auditLog, nonDir(parent))
		}
		if _, err := os.Stat(auditLog); errors.Is(err, syscall.ELOOP) {
			return invalidf("--audit-log %s: a loop of symbolic links; give a file serve may create or append to", auditLog)
		}
	}
	if stateDir != "" {
		fi, err := os.Stat(stateDir)
		switch {
		case err == nil && !fi.IsDir():
			return invalidf("--state-dir %s: is a file, not a directory; give a directory serve can create and write in (one state file per target)", stateDir)
		case errors.Is(err, syscall.ENOTDIR):
			return invalidf("--state-dir %s: %s is not a directory; give a directory serve can create and write in (one state file per target)", stateDir, nonDir(stateDir))
		case errors.Is(err, syscall.ELOOP):
			return invalidf("--state-dir %s: a loop of symbolic links; give a directory serve can create and write in (one state file per target)", stateDir)
		}
	}
	return nil
}

// nonDir is the nearest of path and its parents that exists and is not a
// directory (path itself when none is found).
func nonDir(path string) string {
	for p := path; ; {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
		next := filepath.Dir(p)
		if next == p {
			return path
		}
		p = next
	}
}

// demoLogger keeps the demo's output to the decision table unless asked:
// errors only, in --log-format's format (JSON records with json).
func demoLogger(e *env, log *slog.Logger, lf LogFlags) *slog.Logger {
	if lf.LogLevel == "debug" {
		return log
	}
	lf.LogLevel = "error"
	return lf.Logger(e.stderr)
}

// loadConfig reads the configuration file of --config (config.Load), for
// serve, backtest, profile and tune alike. Every problem is invalid input
// (exit 2): a file that cannot be read is named with the flag and what to
// give; a file with problems lists them (at most config.MaxErrors, each at
// file:line:col) after their count.
func loadConfig(path string) (*config.File, error) {
	cfg, err := config.Load(path)
	var es config.Errors
	switch {
	case err == nil:
		return cfg, nil
	case errors.As(err, &es):
		return nil, invalidf("%d problem(s) in the configuration:\n%w", es.Total(), err)
	case errors.Is(err, fs.ErrNotExist):
		return nil, invalidf("--config %s: no such file: want serve's YAML configuration (docs/config.md; examples/serve-*.yaml are some)", path)
	}
	return nil, fileError("config", path, err)
}

// beforeAuditOpen, when set (tests), runs between the check that
// --audit-log is absent and its Open.
var beforeAuditOpen func()

// removeIfEmpty removes path when it is an empty regular file (an audit log
// a failed start created and never wrote).
func removeIfEmpty(path string) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
		_ = os.Remove(path)
	}
}
