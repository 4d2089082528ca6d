package kube

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// watched is one namespace's informer factory and what was asked of it.
type watched struct {
	factory informers.SharedInformerFactory
	pods    cache.SharedIndexInformer
	hpas    cache.SharedIndexInformer
	mu      sync.Mutex
	lastErr map[string]error // each informer's last list/watch error, by what
	failed  map[string]bool  // informers that did not list in time once
}

// namespace returns ns's informers, creating the factory on first use.
func (c *Cluster) namespace(ns string) *watched {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nss == nil {
		c.nss = map[string]*watched{}
		c.stop = make(chan struct{})
	}
	w := c.nss[ns]
	if w == nil {
		w = &watched{factory: informers.NewSharedInformerFactoryWithOptions(c.Client, 0, informers.WithNamespace(ns)), failed: map[string]bool{}, lastErr: map[string]error{}}
		c.nss[ns] = w
	}
	return w
}

// informer starts (once) and waits for one of ns's informers: get picks it
// from the factory.
func (c *Cluster) informer(ctx context.Context, ns, what string, slot func(*watched) *cache.SharedIndexInformer, get func(informers.SharedInformerFactory) cache.SharedIndexInformer) (cache.SharedIndexInformer, error) {
	w := c.namespace(ns)
	w.mu.Lock()
	p := slot(w)
	if *p == nil {
		inf := get(w.factory)
		_ = inf.SetTransform(stripManagedFields)
		_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
			w.mu.Lock()
			w.lastErr[what] = err // its own: another informer's 403 says nothing of this one
			w.mu.Unlock()
		})
		*p = inf
		w.factory.Start(c.stop)
	}
	inf := *p
	failed := w.failed[what]
	w.mu.Unlock()
	if inf.HasSynced() {
		return inf, nil
	}
	timeout := c.SyncTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if failed {
		// It failed to list before: say so at once (it keeps retrying in
		// the background) rather than hold every cycle for the timeout.
		timeout = time.Millisecond
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !inf.HasSynced() {
		w.mu.Lock()
		err := w.lastErr[what]
		w.mu.Unlock()
		// A list refused for RBAC or credentials is not going to succeed
		// by waiting: say so at once, naming the verb and resource (the
		// API server's message), rather than after the whole timeout.
		refused := err != nil && (apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err))
		if !refused {
			select {
			case <-tick.C:
				continue
			case <-wctx.Done():
			}
		}
		w.mu.Lock()
		err = w.lastErr[what]
		w.failed[what] = true
		w.mu.Unlock()
		if err == nil {
			err = wctx.Err()
		}
		return nil, fmt.Errorf("list/watch %s in namespace %s: %w", what, ns, err)
	}
	return inf, nil
}

// stripManagedFields drops what infscale never reads from cached objects.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
