// Package hashkv compares etcd members' key-value store hashes at one revision, the check etcd
// itself uses to detect a corrupted or diverged member (Maintenance.HashKV; see
// https://etcd.io/docs/v3.6/op-guide/data_corruption/).
//
// Members that have not yet applied the chosen revision answer "future revision"; the
// comparison retries them, within a bound, until they catch up.
package hashkv
