package charttest

import (
	"os"
	"regexp"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/prometheus/prometheus/util/strutil"
	yamlv2 "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestOwnScrapeJob: the scrape job docs/chart.md gives a Prometheus without
// prometheus-operator (the Prometheus Helm chart's extraScrapeConfigs),
// loaded by Prometheus's own config package, is named infscale (rules/
// alert on up{job="infscale"}) and, run by Prometheus's relabeling over the
// meta labels its endpoints discovery gives each Service's http-metrics
// port, keeps the chart's Services and deploy/base's and gives them the
// namespace and service labels the docs then set in keda.seriesLabels: the
// dev and staging releases' queries are the ones the docs' table shows.
// A Service of another component (the activator's) is not scraped.
func TestOwnScrapeJob(t *testing.T) {
	doc, err := os.ReadFile("../../docs/chart.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?ms)^```yaml\n(extraScrapeConfigs: .*?)^```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/chart.md shows no extraScrapeConfigs block")
	}
	var values struct {
		ExtraScrapeConfigs string `json:"extraScrapeConfigs"`
	}
	if err := yaml.UnmarshalStrict(m[1], &values); err != nil {
		t.Fatal(err)
	}
	// The job's keys as Prometheus's config reads them (go.yaml.in/yaml/v2,
	// strictly: a misspelled key fails), its relabeling by Prometheus's
	// own relabel.Config; promtool check config passes it whole.
	var cfg struct {
		ScrapeConfigs []struct {
			JobName             string            `yaml:"job_name"`
			ScrapeInterval      model.Duration    `yaml:"scrape_interval"`
			KubernetesSDConfigs []map[string]any  `yaml:"kubernetes_sd_configs"`
			RelabelConfigs      []*relabel.Config `yaml:"relabel_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yamlv2.UnmarshalStrict([]byte("scrape_configs:\n"+values.ExtraScrapeConfigs), &cfg); err != nil {
		t.Fatalf("docs' job: %v", err)
	}
	if len(cfg.ScrapeConfigs) != 1 || cfg.ScrapeConfigs[0].JobName != "infscale" {
		t.Fatalf("docs' scrape configs %+v, want one job named infscale", cfg.ScrapeConfigs)
	}
	job := cfg.ScrapeConfigs[0]
	for _, rc := range job.RelabelConfigs {
		if err := rc.Validate(model.UTF8Validation); err != nil {
			t.Fatalf("docs' job: %v", err)
		}
	}
	// scraped returns the labels the job gives the series of svc's
	// http-metrics port, and whether it scrapes it.
	scraped := func(svc *corev1.Service) (map[string]string, bool) {
		lb := labels.NewBuilder(labels.FromStrings(
			"__address__", "10.0.0.5:9105",
			"__meta_kubernetes_namespace", svc.Namespace,
			"__meta_kubernetes_service_name", svc.Name,
			"__meta_kubernetes_endpoint_port_name", "http-metrics",
		))
		for k, v := range svc.Labels {
			lb.Set("__meta_kubernetes_service_label_"+strutil.SanitizeLabelName(k), v)
		}
		if !relabel.ProcessBuilder(lb, job.RelabelConfigs...) {
			return nil, false
		}
		return map[string]string{"namespace": lb.Get("namespace"), "service": lb.Get("service")}, true
	}
	for _, c := range []struct{ ns, release, seriesLabels, query string }{
		// docs/chart.md's keda.seriesLabels and its table's queries.
		{"dev", "dev", "{namespace: dev, service: dev-infscale}", `max(infscale_desired_replicas{target="chat", namespace="dev", service="dev-infscale"})`},
		{"staging", "staging", "{namespace: staging, service: staging-infscale}", `max(infscale_desired_replicas{target="chat", namespace="staging", service="staging-infscale"})`},
	} {
		objs, _, err := renderSplitIn(c.ns, c.release, "serviceMonitor: {enabled: false}\nkeda: {seriesLabels: "+c.seriesLabels+"}\n")
		if err != nil {
			t.Fatalf("%s: %v", c.release, err)
		}
		got, ok := scraped(only[*corev1.Service](t, objs))
		if want := "{namespace: " + got["namespace"] + ", service: " + got["service"] + "}"; !ok || want != c.seriesLabels {
			t.Errorf("release %s: the job gives %v (scraped %v), the docs' keda.seriesLabels are %s", c.release, got, ok, c.seriesLabels)
		}
		if q := only[*kedav1alpha1.ScaledObject](t, objs).Spec.Triggers[0].Metadata["query"]; q != c.query {
			t.Errorf("release %s: query %s, want %s", c.release, q, c.query)
		}
	}
	base := readBase[corev1.Service](t, "base/service.yaml")
	base.Namespace = "infscale"                                // kustomization.yaml's namespace
	base.Labels["app.kubernetes.io/component"] = "recommender" // and its labels
	if got, ok := scraped(&base); !ok || got["namespace"] != "infscale" || got["service"] != "infscale" {
		t.Errorf("deploy/base's Service: the job gives %v (scraped %v), want deploy/base's series_labels {namespace: infscale, service: infscale}", got, ok)
	}
	other := &corev1.Service{}
	other.Namespace, other.Name = "llm", "activator-chat"
	other.Labels = map[string]string{"app.kubernetes.io/name": "activator", "app.kubernetes.io/component": "activator"}
	if got, ok := scraped(other); ok {
		t.Errorf("the activator's Service is scraped as infscale: %v", got)
	}
}
