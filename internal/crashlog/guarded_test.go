package crashlog

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// unguarded lists the goroutines (file, enclosing function) that need no
// guard, each with why: a goroutine that cannot panic, or code no
// long-running command runs.
var unguarded = map[string]string{
	"pkg/activator/activator.go WaitUpgrades":       "only waits on a WaitGroup and closes a channel",
	"pkg/activator/websocket.go newWSConn":          "the ctx watcher only selects on channels and closes a conn",
	"pkg/serve/service.go Run":                      "srv.Serve: net/http recovers a handler's panic; reload recovers its own (the running config kept)",
	"cmd/recommender/activator.go Run":              "srv.Serve and Shutdown: net/http recovers a handler's panic itself",
	"cmd/recommender/main.go signalContext":         "waits for the signal context and stops it",
	"internal/crashlog/monitor.go StartMonitor":     "only reaps the crash monitor (cmd.Wait)",
	"internal/crashlog/supervise_unix.go supervise": "only forwards signals to the monitored child (Process.Signal) and reaps (wait4)",
	"cmd/recommender/simulate.go":                   "infscale simulate, a one-shot command: Go's own trace",
	"pkg/load":                                      "infscale load, a one-shot command: Go's own trace",
	"pkg/fleet":                                     "infscale fleet, a loopback test harness: Go's own trace",
	"cmd/recommender/fleet.go":                      "infscale fleet, a loopback test harness: Go's own trace",
	"cmd/recommender/internal/demo":                 "serve --demo's loopback fleet, load and serve: Go's own trace",
	"pkg/kube/kubefake":                             "a test server",
	"internal/promtest":                             "a test helper",
	"internal/status/progress.go NewProgress":       "the heartbeat of a one-shot command's progress (simulate, backtest, tune): Go's own trace",
}

// TestEveryGoroutineGuarded: every goroutine the module's non-test code
// starts (a go statement, a Go method given a function: WaitGroup's,
// errgroup's, or time.AfterFunc's function) defers a crashlog call at the top of its body, or is listed
// in unguarded with the reason. Recover re-panics when no logger is set,
// so a guard changes nothing for a one-shot command; an unguarded
// goroutine in serve or the activator writes Go's plain-text trace, which
// a JSON log pipeline drops (docs/serve.md, "Panics").
func TestEveryGoroutineGuarded(t *testing.T) {
	root := "../.."
	seen := map[string]bool{}
	for _, dir := range []string{"pkg", "internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					call, what := goroutine(n)
					if call == nil {
						return true
					}
					for k := range unguarded {
						if k == rel+" "+fn.Name.Name || k == rel || strings.HasPrefix(rel, k+"/") {
							seen[k] = true
							return true
						}
					}
					if !guarded(call) {
						t.Errorf("%s (%s): %s without a deferred crashlog.Handle or crashlog.Recover at the top of its body; add one, or list it in unguarded with why", fset.Position(n.Pos()), fn.Name.Name, what)
					}
					return true
				})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for key := range unguarded {
		if !seen[key] {
			t.Errorf("unguarded lists %q, which starts no goroutine now: remove it", key)
		}
	}
}

// goroutine returns the function a goroutine runs when n starts one: a go
// statement's call, the function given to a method named Go (a func
// literal or a named one), or time.AfterFunc's (run in a goroutine of its
// own when the timer fires).
func goroutine(n ast.Node) (ast.Expr, string) {
	switch n := n.(type) {
	case *ast.GoStmt:
		return n.Call.Fun, "go statement"
	case *ast.CallExpr:
		sel, ok := n.Fun.(*ast.SelectorExpr)
		switch {
		case !ok:
		case sel.Sel.Name == "Go" && len(n.Args) == 1:
			return n.Args[0], types.ExprString(sel.X) + ".Go"
		case sel.Sel.Name == "AfterFunc" && types.ExprString(sel.X) == "time" && len(n.Args) == 2:
			return n.Args[1], "time.AfterFunc"
		}
	}
	return nil, ""
}

// guarded reports whether fun is a func literal whose body defers
// crashlog.Handle or crashlog.Recover among its top-level statements.
func guarded(fun ast.Expr) bool {
	lit, ok := fun.(*ast.FuncLit)
	if !ok {
		return false
	}
	for _, st := range lit.Body.List {
		d, ok := st.(*ast.DeferStmt)
		if !ok {
			continue
		}
		if sel, ok := d.Call.Fun.(*ast.SelectorExpr); ok {
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "crashlog" && (sel.Sel.Name == "Handle" || sel.Sel.Name == "Recover") {
				return true
			}
		}
	}
	return false
}

// TestGoroutineFound: the checker sees each way the module starts a
// goroutine: a go statement, a Go method given a func literal or a named
// function (errgroup's g.Go(run), whose body it cannot see: unguarded),
// and time.AfterFunc's function, which runs in a goroutine of its own.
// It missed the last two.
func TestGoroutineFound(t *testing.T) {
	src := `package p
func f() {
	go func() { defer crashlog.Recover() }()
	g.Go(func() error { defer crashlog.Recover(); return nil })
	g.Go(run)
	time.AfterFunc(d, func() { defer crashlog.Recover() })
	time.AfterFunc(d, p.heartbeat)
	t.Reset(d)
}`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	ast.Inspect(f, func(n ast.Node) bool {
		if call, what := goroutine(n); call != nil {
			got = append(got, fmt.Sprintf("%s %v", what, guarded(call)))
		}
		return true
	})
	want := "go statement true|g.Go true|g.Go false|time.AfterFunc true|time.AfterFunc false"
	if strings.Join(got, "|") != want {
		t.Errorf("found %q, want %q", strings.Join(got, "|"), want)
	}
}
