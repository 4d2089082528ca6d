//go:build replayharness

// Built with -tags replayharness (make test-kube): it reads the replay's HPA
// consumer through replay.HPAReplicas, a harness the binary does not link.

package kubee2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/replay"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/scale"
	"k8s.io/kubernetes/pkg/controller/podautoscaler"
	"k8s.io/utils/ptr"
)

// stepEvery is the time between two reconciles of the sequence test. The
// windows and periods of its HPAs are odd seconds, so every sample lies a
// whole second away from every window's and period's edge: the
// controller's wall-clock jitter (milliseconds) cannot move one across.
const stepEvery = 2 * time.Second

// scriptedDesired is the External metrics API answering each HPA's
// infscale_desired_replicas{target=NAME} with the value its sequence
// holds at the moment.
type scriptedDesired struct {
	exportedDesired // the other metric kinds: not served
	mu              sync.Mutex
	value           map[string]int
}

func (s *scriptedDesired) set(target string, v int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.value[target] = v
}

func (s *scriptedDesired) GetExternalMetric(_ string, _ string, sel labels.Selector) ([]int64, time.Time, error) {
	target, _ := sel.RequiresExactMatch("target")
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.value[target]
	if !ok {
		return nil, time.Time{}, fmt.Errorf("no infscale_desired_replicas for %q", target)
	}
	return []int64{int64(v) * 1000}, time.Now(), nil // milli-units
}

// gatedScales holds each reconcile of a gated target at its read of the
// scale subresource (the first thing the controller reads) until the test
// releases it, so every reconcile happens at a time the test chose, and
// signals when the controller arrives there (the previous reconcile done).
type gatedScales struct {
	scale.ScalesGetter
	mu    sync.Mutex
	gates map[string]*gate
}

type gate struct{ arrived, release chan struct{} }

func (g *gatedScales) gate(name string) *gate {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gates[name] == nil {
		g.gates[name] = &gate{arrived: make(chan struct{}, 1), release: make(chan struct{})}
	}
	return g.gates[name]
}

func (g *gatedScales) Scales(namespace string) scale.ScaleInterface {
	return gatedScale{g.ScalesGetter.Scales(namespace), g}
}

type gatedScale struct {
	scale.ScaleInterface
	g *gatedScales
}

func (s gatedScale) Get(ctx context.Context, gr schema.GroupResource, name string, opts metav1.GetOptions) (*autoscalingv1.Scale, error) {
	gt := s.g.gate(name)
	select {
	case gt.arrived <- struct{}{}:
	default:
	}
	select {
	case <-gt.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.ScaleInterface.Get(ctx, gr, name, opts)
}

// hpaSequence is one HPA and the infscale outputs it reconciles on, one
// every stepEvery; want is its replica count after each, by hand.
type hpaSequence struct {
	name     string
	policy   string // the same HPA as a replay policy
	min, max int32
	behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
	initial  int32
	desired  []int
	want     []int
}

func pods(n, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: n, PeriodSeconds: period}
}

func percent(n, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: n, PeriodSeconds: period}
}

// hpaSequences are worked by hand with steps 2 s apart (step i at 2i s),
// the workload's status.replicas at the HPA's previous count, ratio =
// desired / current. Window W s holds the recommendations of the last
// floor(W/2) steps, period P s the scale events of the last floor(P/2).
var hpaSequences = []hpaSequence{{
	// The HPA's default behavior at 1/5 of its times: scaleUp max(4
	// pods, 100%) per 3 s, window 0; scaleDown window 5 s, 100% per 3 s;
	// the controller's tolerance 10%.
	//
	//	 0: 2 on 2: keep 2
	//	 1: 30 on 2: limit max(2+4, 4) = 6
	//	 2: 30 on 6: +4 in the period: start 2, limit 6: keep 6
	//	 3: 30 on 6: start 6: limit max(10, 12) = 12
	//	 4: 9 on 12: the window's highest 30: keep 12
	//	 5: 9: window (30 at step 3, 9): keep 12
	//	 6: 9: window 9: 9
	//	 7: 30 on 9: start 9 + 3 removed = 12: limit 24, maxReplicas 20
	//	 8: 21 on 20: ratio 1.05 within 10%: keep 20
	//	 9: 18: ratio 0.9, the band's edge, within: keep 20
	//	10: 17: ratio 0.85: 17, window (20, 20): keep 20
	//	11: 1: window (20 at step 9, 17): 20
	//	12: 1: window (17, 1): 17
	//	13: 1: window 1; start 17 + 3 removed: limit 0: minReplicas 2
	//	14: 2 on 2: keep 2
	name: "scaled-default", policy: "hpa(running:1),min=2,max=20,uppods=4/3s,uppercent=100/3s,downwindow=5,downpercent=100/3s",
	min: 2, max: 20, initial: 2,
	behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{pods(4, 3), percent(100, 3)}},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](5), Policies: []autoscalingv2.HPAScalingPolicy{percent(100, 3)}},
	},
	desired: []int{2, 30, 30, 30, 9, 9, 9, 30, 21, 18, 17, 1, 1, 1, 2},
	want:    []int{2, 6, 6, 12, 12, 12, 9, 20, 20, 20, 20, 20, 17, 2, 2},
}, {
	// Custom policies: tolerance 20%; scaleUp window 3 s, 2 pods per 3 s;
	// scaleDown window 0, max(1 pod per 7 s, 50% per 3 s).
	//
	//	 0: 4 on 4: keep 4
	//	 1: 9 on 4: the scaleUp window's lowest 4: keep 4
	//	 2: 9: window 9: limit 4+2 = 6
	//	 3: 9 on 6: +2 in the period: start 4: keep 6
	//	 4: 9: start 6: 8
	//	 5: 7 on 8: ratio 0.875 within 20%: keep 8
	//	 6: 2 on 8: 1 pod/7 s from start 8 - 2 added = 6: 5; 50%/3 s of 8: 4: 4
	//	 7: 2 on 4: start 4 - 2 + 4 = 6: 5; 50% of start 8: 4: keep 4
	//	 8: 2: 1 pod from start 8: 7; 50% of 4: 2
	//	 9: 14 on 2: the scaleUp window's lowest 2: keep 2
	//	10: 14: limit 2+2 = 4
	name: "custom-policies", policy: "hpa(running:1),min=1,max=12,tolerance=0.2,upwindow=3,downwindow=0,uppods=2/3s,downpods=1/7s,downpercent=50/3s",
	min: 1, max: 12, initial: 4,
	behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](3), Tolerance: ptr.To(resource.MustParse("0.2")),
			Policies: []autoscalingv2.HPAScalingPolicy{pods(2, 3)}},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0), Tolerance: ptr.To(resource.MustParse("0.2")),
			Policies: []autoscalingv2.HPAScalingPolicy{pods(1, 7), percent(50, 3)}},
	},
	desired: []int{4, 9, 9, 9, 9, 7, 2, 2, 2, 14, 14},
	want:    []int{4, 4, 6, 6, 8, 8, 4, 4, 2, 2, 4},
}, {
	// A scaleDown period (7 s) longer than the scaleUp one (3 s): the
	// controller keeps a scale-up event until a later scale-up takes its
	// slot (storeScaleEvent), and a scale-down's period start subtracts it.
	//
	//	 0: 4 on 4: keep 4
	//	 1: 6 on 4: +2 (step 1)
	//	 4: 1 on 6: start 6 - 2 added at step 1 = 4: 3
	//	 5-7: 1 on 3: start 3 + 3 removed: keep 3
	//	 8: 1: start 3: 2
	//	 9: 4 on 2: start 2 + 1 removed = 3: limit 5: 4 (+2 takes step 1's slot)
	//	11: 5 on 4: +1 (takes step 9's slot)
	//	12: 1 on 5: start 5 - 1 = 4: 3 (step 9's +2 is gone)
	//	13-15: keep 3; 16: 2
	name: "down-period-longer", policy: "hpa(running:1),min=1,max=12,downwindow=0,uppods=2/3s,downpods=1/7s",
	min: 1, max: 12, initial: 4,
	behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{pods(2, 3)}},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0), Policies: []autoscalingv2.HPAScalingPolicy{pods(1, 7)}},
	},
	desired: []int{4, 6, 6, 6, 1, 1, 1, 1, 1, 4, 4, 5, 1, 1, 1, 1, 1},
	want:    []int{4, 6, 6, 6, 3, 3, 3, 3, 2, 4, 4, 5, 3, 3, 3, 3, 2},
}, {
	// selectPolicy Min for scaleUp over 4 pods and 50% per 3 s; scaleDown
	// Disabled.
	//
	//	0: 2 on 2: keep 2
	//	1: 20: min(2+4, ceil(2×1.5)) = 3
	//	2: 20 on 3: start 2: keep 3
	//	3: 20: min(3+4, ceil(4.5)) = 5; 4: keep 5
	//	5: 20: min(9, ceil(7.5)) = 8; 6: keep 8
	//	7: 20: min(12, 12) = 12
	//	8, 9: 1 on 12: scale-down disabled: keep 12
	name: "select-policy", policy: "hpa(running:1),min=1,max=20,uppods=4/3s,uppercent=50/3s,upselect=Min,downwindow=0,downselect=Disabled",
	min: 1, max: 20, initial: 2,
	behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   &autoscalingv2.HPAScalingRules{SelectPolicy: ptr.To(autoscalingv2.MinChangePolicySelect), Policies: []autoscalingv2.HPAScalingPolicy{pods(4, 3), percent(50, 3)}},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: ptr.To(autoscalingv2.DisabledPolicySelect)},
	},
	desired: []int{2, 20, 20, 20, 20, 20, 20, 20, 1, 1},
	want:    []int{2, 3, 3, 5, 5, 8, 8, 12, 12, 12},
}, {
	// Started above maxReplicas (the controller sets max without reading
	// the metric, after recording the 14 as its first recommendation),
	// with both windows.
	//
	//	0: 14 > max 10: 10
	//	1: 12 on 10: start 10 + 4 removed: limit 28, max 10
	//	2: 3: the scaleDown window's highest 14: keep 10
	//	3: 3: window (12, 3): keep 10
	//	4: 3: window 3: 3
	//	5: 8 on 3: the scaleUp window's lowest 3: keep 3
	//	6: 8: limit max(3+4, 6) = 7
	name: "above-max", policy: "hpa(running:1),min=2,max=10,upwindow=3,uppods=4/3s,uppercent=100/3s,downwindow=5,downpercent=100/3s",
	min: 2, max: 10, initial: 14,
	behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](3), Policies: []autoscalingv2.HPAScalingPolicy{pods(4, 3), percent(100, 3)}},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](5), Policies: []autoscalingv2.HPAScalingPolicy{percent(100, 3)}},
	},
	desired: []int{6, 12, 3, 3, 3, 8, 8},
	want:    []int{10, 10, 10, 10, 3, 3, 7},
}, {
	// Started below minReplicas: the controller sets min without reading
	// the metric, recording the 1 and the +2.
	//
	//	0: 1 < min 3: 3
	//	1: 8 on 3: start 3 - 2 = 1: limit max(1+4, 2) = 5
	//	2: 8 on 5: start 5 - 2 = 3: limit max(7, 6) = 7
	//	3: 2 on 7: the scaleDown window's highest 8: keep 7
	name: "below-min", policy: "hpa(running:1),min=3,max=20,uppods=4/3s,uppercent=100/3s,downwindow=5,downpercent=100/3s",
	min: 3, max: 20, initial: 1,
	behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{pods(4, 3), percent(100, 3)}},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](5), Policies: []autoscalingv2.HPAScalingPolicy{percent(100, 3)}},
	},
	desired: []int{8, 8, 8, 2},
	want:    []int{3, 5, 7, 7},
}, {
	// No behavior: the controller's older path (normalizeDesiredReplicas,
	// hpa(...)'s behavior=none), a scale-up limit of max(2 × current, 4) at
	// each reconcile, no period (with a behavior's defaults: max(current +
	// 4, 2 × current) per period).
	//
	//	0: 1 on 1: keep 1
	//	1: 10: max(2, 4) = 4 (with a behavior: 1 + 4 = 5)
	//	2: 10 on 4: max(8, 4) = 8
	//	3: 10 on 8: 10
	name: "no-behavior", policy: "hpa(running:1),behavior=none,min=1,max=20",
	min: 1, max: 20, initial: 1,
	desired: []int{1, 10, 10, 10},
	want:    []int{1, 4, 8, 10},
}, {
	// No behavior, the older stabilisation: the highest recommendation of
	// the downscale window (5 min, the whole sequence) and the new one,
	// not bounded by the current count, so a lower metric can still scale
	// up (with a behavior: min(max(current, new), highest) = the new one
	// when it is above current).
	//
	//	0: 1 on 1: keep 1
	//	1: 10: limit max(2, 4) = 4
	//	2: 6 on 4: max(6, 10) = 10, limit 8: 8 (with a behavior: 6)
	//	3: 2 on 8: max(2, 10) = 10, limit 16: 10 (with a behavior: 8)
	name: "no-behavior-window", policy: "hpa(running:1),behavior=none,min=1,max=20",
	min: 1, max: 20, initial: 1,
	desired: []int{1, 10, 6, 2},
	want:    []int{1, 4, 8, 10},
}}

// TestHPAControllerMatchesReplay: the Kubernetes HPA controller
// (pkg/controller/podautoscaler, v1.37.2) and the replay's hpa(...)
// consumer (replay.HPAReplicas) on the same sequences of infscale
// outputs give the same replicas at every step, the hand-worked ones:
// rate limits with their period starts, tolerance, both stabilisation
// windows, minReplicas/maxReplicas, custom policies, selectPolicy Min and
// Disabled, a tolerance in behavior, starts above maxReplicas and below
// minReplicas; and HPAs without behavior (hpa(...)'s behavior=none).
// Each HPA scales its own Deployment through the scale subresource, on an
// External metric with AverageValue 1 as KEDA feeds it; the test plays the Deployment controller (status.replicas follows
// spec.replicas). The sequences run side by side, one controller worker
// each.
func TestHPAControllerMatchesReplay(t *testing.T) {
	c := startCluster(t)
	kc := c.newKubeCluster(t)
	gs := &gatedScales{ScalesGetter: kc.Scales, gates: map[string]*gate{}}
	metrics := &scriptedDesired{value: map[string]int{}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	factory := informers.NewSharedInformerFactory(c.client, 0)
	hc := podautoscaler.NewHorizontalController(ctx, c.client.CoreV1(), gs, c.client.AutoscalingV2(), kc.Mapper, metrics,
		factory.Autoscaling().V2().HorizontalPodAutoscalers(), factory.Core().V1().Pods(),
		time.Second, 5*time.Minute, 0.1, 5*time.Minute, 30*time.Second)
	factory.Start(ctx.Done())
	go hc.Run(ctx, len(hpaSequences))

	type result struct {
		real []int
		err  error
	}
	results := make([]result, len(hpaSequences))
	// A sequence whose reconcile was released late (a loaded machine: the
	// wall clock may have crossed a window's edge) is inconclusive, not
	// wrong: it is played again on a fresh HPA, up to twice.
	todo := make([]int, len(hpaSequences))
	for i := range todo {
		todo[i] = i
	}
	for attempt := 0; attempt < 3 && len(todo) > 0; attempt++ {
		var wg sync.WaitGroup
		for _, i := range todo {
			s := hpaSequences[i]
			if attempt > 0 {
				s.name += fmt.Sprintf("-again%d", attempt)
			}
			c.createDeployment(t, s.name, s.initial)
			wg.Go(func() {
				results[i].real, results[i].err = c.playSequence(ctx, gs, metrics, s)
			})
		}
		wg.Wait()
		var late []int
		for _, i := range todo {
			if errors.Is(results[i].err, errLate) {
				t.Logf("%s, attempt %d: %v", hpaSequences[i].name, attempt+1, results[i].err)
				late = append(late, i)
			}
		}
		todo = late
	}

	for i, s := range hpaSequences {
		if results[i].err != nil {
			t.Errorf("%s: %v", s.name, results[i].err)
			continue
		}
		pol, err := replay.ParsePolicy(s.policy)
		if err != nil {
			t.Fatal(err)
		}
		steps := make([]replay.HPAStep, len(s.desired))
		cur := int(s.initial)
		for j, d := range s.desired {
			steps[j] = replay.HPAStep{At: float64(j) * stepEvery.Seconds(), Desired: d, Current: cur}
			cur = results[i].real[j]
		}
		rep, err := replay.HPAReplicas(pol, time.Unix(0, 0), steps)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(results[i].real, rep) || !slices.Equal(rep, s.want) {
			t.Errorf("%s on desired %v:\n  controller %v\n  replay     %v\n  by hand    %v", s.name, s.desired, results[i].real, rep, s.want)
		}
	}
}

// errLate is a reconcile released more than 400 ms after its time.
var errLate = errors.New("too late to stay clear of the windows' edges (a loaded machine)")

// playSequence creates s's HPA and feeds the controller s.desired, one
// value per reconcile, each reconcile released stepEvery after the
// previous one; it returns spec.replicas after each.
func (c *cluster) playSequence(ctx context.Context, gs *gatedScales, metrics *scriptedDesired, s hpaSequence) ([]int, error) {
	gt := gs.gate(s.name)
	deps := c.client.AppsV1().Deployments(metav1.NamespaceDefault)
	// The Deployment controller's part: status.replicas = spec.replicas
	// (all pods created at once), read by the AverageValue arithmetic.
	follow := func() (int, error) {
		d, err := deps.Get(ctx, s.name, metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		d.Status.Replicas = *d.Spec.Replicas
		if _, err := deps.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
			return 0, err
		}
		return int(*d.Spec.Replicas), nil
	}
	if _, err := follow(); err != nil {
		return nil, err
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: metav1.NamespaceDefault},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: s.name},
			MinReplicas:    ptr.To(s.min), MaxReplicas: s.max, Behavior: s.behavior,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "infscale_desired_replicas", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"target": s.name}}},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(1, resource.DecimalSI)},
			}}},
		},
	}
	if _, err := c.client.AutoscalingV2().HorizontalPodAutoscalers(metav1.NamespaceDefault).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	arrive := func(step int) error {
		select {
		case <-gt.arrived:
			return nil
		case <-time.After(30 * time.Second):
			return fmt.Errorf("step %d: the controller did not reconcile within 30 s", step)
		}
	}
	var got []int
	var t0 time.Time
	for i, d := range s.desired {
		if err := arrive(i); err != nil {
			return got, err
		}
		if i > 0 { // reconcile i-1 is done
			n, err := follow()
			if err != nil {
				return got, err
			}
			got = append(got, n)
		} else {
			t0 = time.Now().Add(200 * time.Millisecond)
		}
		metrics.set(s.name, d)
		at := t0.Add(time.Duration(i) * stepEvery)
		if late := time.Since(at); late > 400*time.Millisecond {
			// Abandoned: the HPA goes and its reconciles pass ungated, so
			// no controller worker stays held for a replay.
			_ = c.client.AutoscalingV2().HorizontalPodAutoscalers(metav1.NamespaceDefault).Delete(ctx, s.name, metav1.DeleteOptions{})
			close(gt.release)
			return got, fmt.Errorf("step %d: ready %v after its time: %w", i, late.Round(time.Millisecond), errLate)
		}
		time.Sleep(time.Until(at))
		gt.release <- struct{}{}
	}
	if err := arrive(len(s.desired)); err != nil {
		return got, err
	}
	d, err := deps.Get(ctx, s.name, metav1.GetOptions{})
	if err != nil {
		return got, err
	}
	return append(got, int(*d.Spec.Replicas)), nil
}
