package kubee2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/kubernetes/pkg/controller/podautoscaler"
	metricsclient "k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// scaledObject is the part of deploy/keda/scaledobject.yaml KEDA turns
// into the HPA it creates.
type scaledObject struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		MinReplicaCount *int32 `json:"minReplicaCount"`
		MaxReplicaCount int32  `json:"maxReplicaCount"`
		Advanced        struct {
			HorizontalPodAutoscalerConfig struct {
				Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior"`
			} `json:"horizontalPodAutoscalerConfig"`
		} `json:"advanced"`
		Triggers []struct {
			MetricType string            `json:"metricType"`
			Metadata   map[string]string `json:"metadata"`
		} `json:"triggers"`
	} `json:"spec"`
}

// exportedDesired is the External metrics API as KEDA's metrics server
// answers the HPA for the shipped trigger: the value of
// infscale_desired_replicas{target="chat"} on serve's /metrics, read at
// each call, in milli-units (the HPA controller's unit).
type exportedDesired struct{ url string }

func (e exportedDesired) GetExternalMetric(_ string, _ string, _ labels.Selector) ([]int64, time.Time, error) {
	resp, err := http.Get(e.url)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "infscale_desired_replicas{") && strings.Contains(line, `target="chat"`) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				return nil, time.Time{}, err
			}
			return []int64{int64(v * 1000)}, time.Now(), nil
		}
	}
	return nil, time.Time{}, fmt.Errorf("no infscale_desired_replicas for chat yet")
}

func (exportedDesired) GetResourceMetric(context.Context, corev1.ResourceName, string, labels.Selector, string) (metricsclient.PodMetricsInfo, time.Time, error) {
	return nil, time.Time{}, fmt.Errorf("not served")
}

func (exportedDesired) GetRawMetric(string, string, labels.Selector, labels.Selector) (metricsclient.PodMetricsInfo, time.Time, error) {
	return nil, time.Time{}, fmt.Errorf("not served")
}

func (exportedDesired) GetObjectMetric(string, string, *autoscalingv2.CrossVersionObjectReference, labels.Selector) (int64, time.Time, error) {
	return 0, time.Time{}, fmt.Errorf("not served")
}

// TestHPAControllerFollowsInfscale: the Kubernetes HPA controller itself
// (pkg/controller/podautoscaler, v1.37.2) scaling on infscale's export as
// KEDA feeds it, with the HPA KEDA makes from deploy/keda/scaledobject.yaml
// (External metric, AverageValue threshold 1, its behavior: tolerance 0, no
// windows). serve only exports (no apply). By hand: 2 pods at 20, target
// 10: infscale 4; HPA ceil(4 / 1) = 4. Then 4 pods at 5: infscale
// ceil(20/10) = 2; HPA ceil(2 / 1) = 2.
func TestHPAControllerFollowsInfscale(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "keda", "scaledobject.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var so scaledObject
	if err := yaml.Unmarshal(b, &so); err != nil {
		t.Fatal(err)
	}
	tr := so.Spec.Triggers[0]
	if tr.MetricType != "AverageValue" {
		t.Fatalf("shipped trigger metricType %q, this test builds AverageValue", tr.MetricType)
	}
	threshold, err := resource.ParseQuantity(tr.Metadata["threshold"])
	if err != nil {
		t.Fatal(err)
	}

	c := startCluster(t)
	f, reps := c.busyPair(t)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := c.startServe(t, chatConfig(f.Port, ""), "--listen", addr)

	// The HPA KEDA creates for the ScaledObject.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "keda-hpa-" + so.Metadata.Name, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"scaledobject.keda.sh/name": so.Metadata.Name}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: chatRef.CrossVersionObjectReference,
			MinReplicas:    so.Spec.MinReplicaCount, MaxReplicas: so.Spec.MaxReplicaCount,
			Behavior: so.Spec.Advanced.HorizontalPodAutoscalerConfig.Behavior,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "s0-prometheus", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"scaledobject.keda.sh/name": so.Metadata.Name}}},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(threshold)},
			}}},
		},
	}
	got, err := c.client.AutoscalingV2().HorizontalPodAutoscalers(metav1.NamespaceDefault).Create(ctx, hpa, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// tolerance is GA in 1.37: the API server keeps it (an older one drops it).
	if bh := got.Spec.Behavior; bh == nil || bh.ScaleUp == nil || bh.ScaleUp.Tolerance == nil || !bh.ScaleUp.Tolerance.IsZero() || bh.ScaleDown.Tolerance == nil {
		t.Fatalf("stored behavior %+v: tolerance 0 dropped", got.Spec.Behavior)
	}

	kc := c.newKubeCluster(t)
	factory := informers.NewSharedInformerFactory(c.client, 0)
	hc := podautoscaler.NewHorizontalController(ctx, c.client.CoreV1(), kc.Scales, c.client.AutoscalingV2(), kc.Mapper,
		exportedDesired{url: "http://" + addr + "/metrics"},
		factory.Autoscaling().V2().HorizontalPodAutoscalers(), factory.Core().V1().Pods(),
		time.Second, 5*time.Minute, 0.1, 5*time.Minute, 30*time.Second)
	factory.Start(ctx.Done())
	go hc.Run(ctx, 1)

	c.waitReplicas(t, s, 4)
	for _, r := range reps {
		r.Set(4, 1)
	}
	// The ReplicaSet adds the two pods the HPA asked for.
	reps = append(reps, f.Start(t, 4, 1), f.Start(t, 4, 1))
	c.createPod(t, "chat", "chat-c", f.Port, reps[2].IP, true)
	c.createPod(t, "chat", "chat-d", f.Port, reps[3].IP, true)
	c.waitReplicas(t, s, 2)
}
