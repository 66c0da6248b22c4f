package members_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	goldenfile "github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/golden"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/invocation/invocationtest"
	"github.com/etcd-operator/etcd-operator/internal/cmd/kubectletcd/members"
	"github.com/etcd-operator/etcd-operator/internal/etcdclient"
)

const ns = "tenant-a"

// world is a cluster "etcd": its objects and etcd's member list.
type world struct {
	objs []client.Object
	list []etcdclient.Member
}

func newWorld() *world {
	return &world{objs: []client.Object{&etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd"},
		Spec:       etcdv1alpha2.EtcdClusterSpec{Version: "3.6.5"},
		Status:     etcdv1alpha2.EtcdClusterStatus{ClusterID: "8e9e05c52164694d"},
	}}}
}

// cr adds an EtcdMember with a running Pod; memberID "" is a member not added yet.
func (w *world) cr(name, memberID string, voter bool) {
	labels := map[string]string{etcdv1alpha2.LabelCluster: "etcd"}
	w.objs = append(w.objs,
		&etcdv1alpha2.EtcdMember{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec:       etcdv1alpha2.EtcdMemberSpec{ClusterName: "etcd", Version: "3.6.5"},
			Status:     etcdv1alpha2.EtcdMemberStatus{MemberID: memberID, IsVoter: voter, PVCName: "data-" + name},
		},
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name), Labels: labels},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		})
}

// etcd adds a member to etcd's list; started members have their name and client URL.
func (w *world) etcd(name string, id uint64, learner, started bool) {
	host := name + ".etcd." + ns + ".svc"
	m := etcdclient.Member{ID: id, IsLearner: learner, PeerURLs: []string{"http://" + host + ":2380"}}
	if started {
		m.Name, m.ClientURLs = name, []string{"http://" + host + ":2379"}
	}
	w.list = append(w.list, m)
}

func healthy() *world {
	w := newWorld()
	for i, n := range []string{"etcd-4kq9d", "etcd-7vx2m", "etcd-x7k2p"} {
		id := []uint64{0x6c1f0e2b8a4d7731, 0xa03d5c9e11b2f408, 0xd4e8f61a97c0b2e5}[i]
		w.cr(n, etcdclient.FormatID(id), true)
		w.etcd(n, id, false, true)
	}
	return w
}

// orphans: etcd lists a learner no EtcdMember is; etcd-gone was removed from etcd; etcd-new is
// not added yet; etcd-q2w9z was added as a learner and has not started.
func orphans() *world {
	w := healthy()
	w.etcd("etcd-stray", 0x1234abcd, true, true)
	w.cr("etcd-gone", "77e1c0ffee", true)
	w.cr("etcd-new", "", false)
	w.cr("etcd-q2w9z", "3f6b2d90c1e8a457", false)
	w.etcd("etcd-q2w9z", 0x3f6b2d90c1e8a457, true, false)
	return w
}

func (w *world) env(t *testing.T) *invocationtest.Env {
	t.Helper()
	e := invocationtest.New(t, ns, w.objs...)
	e.Etcd.Members = w.list
	return e
}

func run(t *testing.T, e *invocationtest.Env) error {
	t.Helper()
	return members.Run(t.Context(), members.Options{Cluster: "etcd"}, e.Deps)
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for name, w := range map[string]func() *world{"healthy": healthy, "orphans": orphans, "no-etcd": orphans} {
		for _, output := range []string{invocation.OutputText, invocation.OutputJSON} {
			t.Run(name+"/"+output, func(t *testing.T) {
				t.Parallel()
				e := w().env(t)
				e.Deps.Globals.Output = output
				e.Deps.Globals.NoEtcd = name == "no-etcd"
				if err := run(t, e); err != nil {
					t.Fatal(err)
				}
				golden(t, name+"."+output+".golden", e.Out.String())
				if want := []string{"MemberList"}; name != "no-etcd" && !cmp.Equal(e.Etcd.Calls, want) {
					t.Errorf("calls %v, want %v", e.Etcd.Calls, want)
				} else if name == "no-etcd" && len(e.Etcd.Calls) > 0 {
					t.Errorf("--no-etcd called etcd: %v", e.Etcd.Calls)
				}
			})
		}
	}
}

func TestWithoutEtcdsListItShowsTheEtcdMembersAndFails(t *testing.T) {
	t.Parallel()
	for name, breakIt := range map[string]func(*invocationtest.Etcd){
		"dial": func(f *invocationtest.Etcd) {
			f.DialErr = errors.New("port-forward to Pod etcd-4kq9d: connection refused")
		},
		"MemberList": func(f *invocationtest.Etcd) {
			f.Errs = map[string]error{"MemberList": etcdclient.NewError("MemberList", etcdclient.ErrNoLeader)}
		},
	} {
		e := orphans().env(t)
		breakIt(e.Etcd)
		err := run(t, e)
		if invocation.Code(err) != invocation.ExitError || !strings.Contains(err.Error(), "--no-etcd") {
			t.Errorf("%s failed: got %v (exit %d), want exit 1 naming --no-etcd", name, err, invocation.Code(err))
		}
		out := e.Out.String()
		if !strings.Contains(out, "etcd-gone") || strings.Contains(out, "orphan") {
			t.Errorf("%s failed: want the EtcdMembers listed and no orphan claimed without etcd's list:\n%s", name, out)
		}
	}
}

func TestSecretsNeverAppear(t *testing.T) {
	t.Parallel()
	const canary = "canary-root-password-5e6f"
	w := healthy()
	w.objs = append(w.objs, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd-root"},
		Data:       map[string][]byte{"password": []byte(canary)},
	})
	c := w.objs[0].(*etcdv1alpha2.EtcdCluster)
	c.Spec.Auth = &etcdv1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: "etcd-root"}}
	c.Status.AuthEnabled = true
	for _, output := range []string{invocation.OutputText, invocation.OutputJSON, invocation.OutputYAML} {
		e := w.env(t)
		e.Deps.Globals.Output = output
		if err := run(t, e); err != nil {
			t.Fatal(err)
		}
		all := e.Out.String() + e.ErrOut.String()
		if strings.Contains(all, canary) || strings.Contains(all, base64.StdEncoding.EncodeToString([]byte(canary))) {
			t.Errorf("-o %s printed the root password", output)
		}
	}
}

// golden compares got with testdata/name through the shared helper (-update rewrites it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.Check(t, name, []byte(got))
}
