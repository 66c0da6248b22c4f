// Command resizer is the local cluster's external volume resizer for the StorageClass
// local-expandable (cluster.ExpandableStorageClassName). localcluster up builds and starts it
// as a daemon next to kube-controller-manager.
//
// kube-controller-manager's expand controller leaves a PVC whose volume plugin cannot expand
// (local volumes cannot) to an external resizer ("waiting for an external controller to expand
// this PVC"). This one does what a CSI external-resizer does for a driver that needs no node
// expansion: for a bound PVC of its class whose request exceeds status.capacity, it marks the
// resize in progress, sets the PV's capacity to the request, then sets the PVC's
// status.capacity and clears the resize conditions. Local volumes do not enforce a size, so
// recording the new capacity is all an expansion is here: honest for a test cluster, and it
// drives the operator through the same API states a real expansion does.
//
//	resizer --kubeconfig PATH --class local-expandable
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

// component names the resizer in Events, as external-resizer does with its driver name.
const component = "local-expandable-resizer"

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	class := flag.String("class", "local-expandable", "StorageClass whose PVCs this resizer expands")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *class); err != nil {
		log.Printf("resizer: %v", err)
		stop()
		os.Exit(1)
	}
}

type resizer struct {
	cs       kubernetes.Interface
	class    string
	pvcs     cache.Indexer
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
}

func run(ctx context.Context, kubeconfig, class string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.UserAgent = component
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	defer broadcaster.Shutdown()

	factory := informers.NewSharedInformerFactory(cs, 10*time.Minute)
	inf := factory.Core().V1().PersistentVolumeClaims().Informer()
	r := &resizer{
		cs: cs, class: class, pvcs: inf.GetIndexer(),
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		recorder: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component}),
	}
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			r.queue.Add(key)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("PVC cache did not sync")
	}
	log.Printf("resizer: expanding PVCs of StorageClass %s", class)
	go func() {
		<-ctx.Done()
		r.queue.ShutDown()
	}()
	for r.next(ctx) {
	}
	return nil
}

// next processes one key; false once the queue shut down.
func (r *resizer) next(ctx context.Context) bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	if err := r.sync(ctx, key); err != nil {
		log.Printf("resizer: %s: %v (retrying)", key, err)
		r.queue.AddRateLimited(key)
		return true
	}
	r.queue.Forget(key)
	return true
}

// sync expands PVC key when it is bound, of the resizer's class, and asks for more than it has.
func (r *resizer) sync(ctx context.Context, key string) error {
	obj, exists, err := r.pvcs.GetByKey(key)
	if err != nil || !exists {
		return err
	}
	pvc := obj.(*corev1.PersistentVolumeClaim).DeepCopy()
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != r.class ||
		pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return nil
	}
	want := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	have := pvc.Status.Capacity[corev1.ResourceStorage]
	if want.Cmp(have) <= 0 {
		return nil
	}
	log.Printf("resizer: expanding %s from %s to %s", key, have.String(), want.String())

	// 1. In progress, as external-resizer marks it: the Resizing condition and the size being
	// allocated.
	pvc.Status.Conditions = withoutResizeConditions(pvc.Status.Conditions)
	pvc.Status.Conditions = append(pvc.Status.Conditions, corev1.PersistentVolumeClaimCondition{
		Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now(),
	})
	pvc.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: want}
	pvc.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{
		corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInProgress,
	}
	pvc, err = r.cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("marking the resize in progress: %w", err)
	}
	r.recorder.Eventf(pvc, corev1.EventTypeNormal, "Resizing", "External resizer is resizing volume %s", pvc.Spec.VolumeName)

	// 2. The volume: a local volume has no size to change but the one its PV records.
	pv, err := r.cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading PV %s: %w", pvc.Spec.VolumeName, err)
	}
	if cur := pv.Spec.Capacity[corev1.ResourceStorage]; cur.Cmp(want) < 0 {
		pv.Spec.Capacity[corev1.ResourceStorage] = want
		if _, err := r.cs.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating the capacity of PV %s: %w", pv.Name, err)
		}
	}

	// 3. Finished: no node expansion is needed, so the claim reports the size at once.
	pvc.Status.Capacity[corev1.ResourceStorage] = want
	pvc.Status.Conditions = withoutResizeConditions(pvc.Status.Conditions)
	pvc.Status.AllocatedResourceStatuses = nil
	if _, err := r.cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("finishing the resize: %w", err)
	}
	r.recorder.Eventf(pvc, corev1.EventTypeNormal, "VolumeResizeSuccessful", "Resize volume %s to %s succeeded", pv.Name, want.String())
	log.Printf("resizer: %s now reports %s", key, want.String())
	return nil
}

func withoutResizeConditions(in []corev1.PersistentVolumeClaimCondition) []corev1.PersistentVolumeClaimCondition {
	var out []corev1.PersistentVolumeClaimCondition
	for _, c := range in {
		if c.Type != corev1.PersistentVolumeClaimResizing && c.Type != corev1.PersistentVolumeClaimFileSystemResizePending {
			out = append(out, c)
		}
	}
	return out
}
