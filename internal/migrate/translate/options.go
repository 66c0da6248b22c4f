package translate

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	etcdv1alpha2 "github.com/etcd-operator/etcd-operator/api/v1alpha2"
	"github.com/etcd-operator/etcd-operator/internal/legacy"
)

// retentionPattern is spec.options.autoCompactionRetention's schema pattern (docs/api.md).
var retentionPattern = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$|^[0-9]+$`)

// maxQuota is the schema maximum of quotaBackendBytes, 1 TiB.
const maxQuota int64 = 1 << 40

// etcdDefaultQuota is what etcd uses without --quota-backend-bytes, and what quotaBackendBytes
// 0 means.
var etcdDefaultQuota = resource.MustParse("2Gi")

// typedOptions are the legacy option keys that have a typed field here.
var typedOptions = map[string]bool{
	legacy.OptionQuotaBackendBytes: true, legacy.OptionAutoCompactionMode: true,
	legacy.OptionAutoCompactionRetention: true, legacy.OptionSnapshotCount: true,
}

// translateOptions writes the four typed options from the live flags, so that the implicit
// legacy defaults (5m retention, snapshot-count 10000, 95 % quota) and any option the user set
// keep their effect when the operator first rolls a member. Other options are dropped, each
// warned about.
func (t *translator) translateOptions() {
	o := &etcdv1alpha2.EtcdOptions{}
	if v, ok := t.flags[legacy.OptionQuotaBackendBytes]; ok {
		o.QuotaBackendBytes = t.quota(v)
	} else if t.in.StatefulSet != nil {
		t.noQuotaFlag(o)
	}
	if v, ok := t.flags[legacy.OptionSnapshotCount]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 1 {
			o.SnapshotCount = ptr.To(n)
		} else {
			t.refuseOption(legacy.OptionSnapshotCount, v, "a positive integer")
		}
	}
	if v, ok := t.flags[legacy.OptionAutoCompactionMode]; ok {
		if v != string(etcdv1alpha2.AutoCompactionPeriodic) && v != string(etcdv1alpha2.AutoCompactionRevision) {
			t.refuseOption(legacy.OptionAutoCompactionMode, v, `"periodic" or "revision"`)
		} else {
			o.AutoCompactionMode = etcdv1alpha2.AutoCompactionMode(v)
		}
	}
	if v, ok := t.flags[legacy.OptionAutoCompactionRetention]; ok {
		t.retention(o, v)
	}
	keys := make([]string, 0, len(t.in.Cluster.Spec.Options))
	for k := range t.in.Cluster.Spec.Options {
		if !typedOptions[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.warn(WarnOptionDropped, "spec.options."+k,
			fmt.Sprintf("--%s is dropped: this operator passes only typed options (quotaBackendBytes, autoCompactionMode, autoCompactionRetention, snapshotCount); members keep the flag until their first roll", k),
			"")
	}
	if *o != (etcdv1alpha2.EtcdOptions{}) {
		t.spec.Options = o
	}
}

func (t *translator) quota(v string) *int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > maxQuota {
		t.refuseOption(legacy.OptionQuotaBackendBytes, v, "an integer number of bytes between 0 and 1 TiB")
		return nil
	}
	effective := n
	if n == 0 {
		effective = etcdDefaultQuota.Value()
	}
	if !t.size.IsZero() && effective > t.size.Value() {
		t.refuse(RefusalOptionInvalid, "spec.options."+legacy.OptionQuotaBackendBytes,
			fmt.Sprintf("--quota-backend-bytes=%s exceeds the %s volume: the disk would fill before etcd raises NOSPACE, and this operator's API refuses it", v, t.size.String()),
			"lower quota-backend-bytes in the legacy spec (the legacy operator rolls it out), or expand the PVCs, then re-run")
		return nil
	}
	return ptr.To(n)
}

// noQuotaFlag keeps etcd's own default when the legacy members run without the flag: unset
// here would mean min(2 GiB, size/2), a different quota.
func (t *translator) noQuotaFlag(o *etcdv1alpha2.EtcdOptions) {
	if t.size.IsZero() || t.size.Cmp(etcdDefaultQuota) >= 0 {
		o.QuotaBackendBytes = ptr.To(int64(0))
		return
	}
	t.warn(WarnQuotaChanged, "spec.options."+legacy.OptionQuotaBackendBytes,
		fmt.Sprintf("members run with etcd's default quota of 2 GiB on a %s volume; from their first roll they run with half the volume, so that NOSPACE fires before the disk fills", t.size.String()), "")
}

func (t *translator) retention(o *etcdv1alpha2.EtcdOptions, v string) {
	switch {
	case !retentionPattern.MatchString(v):
		t.refuseOption(legacy.OptionAutoCompactionRetention, v, `a duration such as "5m" or "1h30m", or an integer`)
	case o.AutoCompactionMode == etcdv1alpha2.AutoCompactionRevision && !regexp.MustCompile(`^[0-9]+$`).MatchString(v):
		t.refuseOption(legacy.OptionAutoCompactionRetention, v, "a revision count (an integer) in revision mode")
	default:
		o.AutoCompactionRetention = v
	}
}

func (t *translator) refuseOption(key, value, want string) {
	t.refuse(RefusalOptionInvalid, "spec.options."+key,
		fmt.Sprintf("the members run --%s=%s, which is not %s", key, value, want),
		"correct spec.options."+key+" in the legacy spec and let the legacy operator roll it out, then re-run")
}
