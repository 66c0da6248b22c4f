package invocationtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Writes records every write a command makes through the Kubernetes client, one line each:
// "patch <Kind> <namespace>/<name> <body>", "patch-status …" or "create <Kind> <namespace>/<name>".
type Writes struct {
	Lines []string
}

// RecordWrites wraps e's Kubernetes client so that its writes are recorded; they still reach
// the fake client.
func (e *Env) RecordWrites(tb testing.TB) *Writes {
	tb.Helper()
	inner, ok := e.Deps.Kube.(client.WithWatch)
	if !ok {
		tb.Fatalf("the fake client %T is not a client.WithWatch", e.Deps.Kube)
	}
	w := &Writes{}
	e.Deps.Kube = interceptor.NewClient(inner, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			w.add(tb, "patch", obj, patch)
			return c.Patch(ctx, obj, patch, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			w.add(tb, "patch-"+sub, obj, patch)
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.Lines = append(w.Lines, fmt.Sprintf("create %s %s/%s", kind(obj), obj.GetNamespace(), obj.GetName()))
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.Lines = append(w.Lines, fmt.Sprintf("update %s %s/%s", kind(obj), obj.GetNamespace(), obj.GetName()))
			return c.Update(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			w.Lines = append(w.Lines, fmt.Sprintf("delete %s %s/%s", kind(obj), obj.GetNamespace(), obj.GetName()))
			return c.Delete(ctx, obj, opts...)
		},
	})
	return w
}

func (w *Writes) add(tb testing.TB, verb string, obj client.Object, patch client.Patch) {
	tb.Helper()
	body, err := patch.Data(obj)
	if err != nil {
		tb.Fatalf("rendering a %s patch: %v", patch.Type(), err)
	}
	w.Lines = append(w.Lines, fmt.Sprintf("%s %s %s/%s %s", verb, kind(obj), obj.GetNamespace(), obj.GetName(), body))
}

func kind(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return reflect.TypeOf(obj).Elem().Name()
}

// GoldenFile compares got with testdata/name, or writes got there when update is true (each
// test package declares its own -update flag and passes it in).
func GoldenFile(tb testing.TB, name string, got []byte, update bool) {
	tb.Helper()
	path := filepath.Join("testdata", name)
	if update {
		if err := os.MkdirAll("testdata", 0o750); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o600); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path) //nolint:gosec // the path is testdata/<name> in the calling test's own package
	if err != nil {
		tb.Fatalf("reading the golden file (run go test with -update to write it): %v", err)
	}
	if string(want) != string(got) {
		tb.Errorf("%s differs from the output (run go test with -update to rewrite it)\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// Step plays one move of the operator for a command that follows with --wait: it waits until
// the command sleeps on the fake clock, runs change, and moves the clock a minute on, past
// --wait's poll interval, so that the command looks again.
func Step(tb testing.TB, e *Env, change func()) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !e.Clock.HasWaiters() {
		if time.Now().After(deadline) {
			tb.Fatal("the command never waited for the clock")
		}
		time.Sleep(time.Millisecond)
	}
	change()
	e.Clock.Step(time.Minute)
}

// Wait returns what the command running in the background sent on done, failing the test if
// it does not finish within 10 seconds.
func Wait(tb testing.TB, done <-chan error) error {
	tb.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		tb.Fatal("the command did not finish")
		return nil
	}
}
