// Package restoreagent is the restore agent: the program a new cluster's seed runs in its
// `restore` init container (`etcd-operator restore-agent`), in the target etcd image, so that
// the etcdutl of exactly the version that will open the data restores it. It fills an empty data
// dir from a snapshot in an S3-compatible store or on a PVC and reports the outcome, or the
// reason it failed, through its container's termination message.
//
// The contract it shares with the Pod builder and the controller (environment, checks, reasons,
// result) is in package restore; docs/backup-restore.md, "Restore", describes it for users.
//
// Order of work, each step failing before the next costs anything, and nothing written under
// member/ until the last step:
//
//  1. parse the environment (the exact key or path is checked here);
//  2. stop at once if the data dir holds member/ already (a restore done, or data of its own);
//  3. find etcdutl, and remove what an interrupted earlier run left;
//  4. read the artifact's size and recorded etcd version; refuse a newer minor than the target;
//  5. check the data volume has room for twice the artifact;
//  6. decide the expected SHA-256 (the spec's checksum, else the .sha256 sidecar, else none);
//  7. download the artifact onto the data volume, hashing it as it is written, and compare;
//  8. `etcdutl snapshot restore` (with its integrity-hash check) into a staging folder on the
//     same volume, sync it, and rename its member/ into place.
package restoreagent
