package etcdproc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// PrepareMember allocates loopback ports and a folder for a new member named name that will
// join the running cluster c, without starting it, and appends it to c.Members so that Close
// (and StartForTest's cleanup) stops it too. It is how tests play the operator's scale-up:
//
//  1. PrepareMember, for the member's PeerURL;
//  2. add it to etcd (MemberAddAsLearner with m.PeerURL);
//  3. StartJoining with the --initial-cluster built from etcd's member list.
//
// The member uses the binary of c's first member.
func (c *Cluster) PrepareMember(name string) (*Member, error) {
	if len(c.Members) == 0 {
		return nil, errors.New("etcdproc: PrepareMember needs a cluster with at least one member")
	}
	for _, m := range c.Members {
		if m.Name == name {
			return nil, fmt.Errorf("etcdproc: member %q exists", name)
		}
	}
	// NewCluster lays members out as <dir>/<name>/data.
	root := filepath.Dir(filepath.Dir(c.Members[0].DataDir))
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating member dir: %w", err)
	}
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	m := &Member{
		Name:      name,
		ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		DataDir:   filepath.Join(dir, "data"),
		LogPath:   filepath.Join(dir, "etcd.log"),
		binary:    c.Members[0].binary,
	}
	c.Members = append(c.Members, m)
	return m, nil
}

// StartJoining starts a member made by PrepareMember with --initial-cluster-state=existing and
// the given --initial-cluster (comma-separated name=peerURL pairs, including this member), as
// etcd requires of a member added at runtime
// (https://etcd.io/docs/v3.6/op-guide/runtime-configuration/#add-a-new-member). extraArgs are
// appended to the flags. Later Start calls restart it with the same flags.
func (m *Member) StartJoining(initialCluster string, extraArgs ...string) error {
	m.mu.Lock()
	m.args = append([]string{
		"--name=" + m.Name,
		"--data-dir=" + m.DataDir,
		"--listen-client-urls=" + m.ClientURL,
		"--advertise-client-urls=" + m.ClientURL,
		"--listen-peer-urls=" + m.PeerURL,
		"--initial-advertise-peer-urls=" + m.PeerURL,
		"--initial-cluster=" + initialCluster,
		"--initial-cluster-state=existing",
		"--logger=zap",
		"--log-outputs=stderr",
	}, extraArgs...)
	m.mu.Unlock()
	return m.Start()
}
