package etcdcluster_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
)

// watchCluster calls seen with every version of EtcdCluster name the API server stores from now
// on, in order, until the returned stop is called: a status that lasted a millisecond is seen
// as surely as one that lasted a minute, which polling cannot promise on a loaded machine.
func (w *world) watchCluster(t *testing.T, name string, seen func(*etcdv1alpha2.EtcdCluster)) (stop func()) {
	t.Helper()
	wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		rv := ""
		for ctx.Err() == nil {
			rv = watchFrom(ctx, wc, w.ns, name, rv, seen)
		}
	}()
	return func() { cancel(); <-done }
}

// watchFrom watches EtcdCluster name from resourceVersion rv ("" for now) until the watch ends,
// and returns the version to resume from ("" when rv expired).
func watchFrom(ctx context.Context, wc client.WithWatch, ns, name, rv string, seen func(*etcdv1alpha2.EtcdCluster)) string {
	var list etcdv1alpha2.EtcdClusterList
	wi, err := wc.Watch(ctx, &list, client.InNamespace(ns), client.MatchingFields{"metadata.name": name},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
	if err != nil {
		return rv
	}
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		switch c := ev.Object.(type) {
		case *etcdv1alpha2.EtcdCluster:
			rv = c.ResourceVersion
			seen(c)
		case *metav1.Status:
			if ev.Type == watch.Error {
				return "" // expired: start again from the current version
			}
		}
	}
	return rv
}
