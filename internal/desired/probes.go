package desired

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Probe settings for etcd >= 3.5.11, which serves /livez and /readyz
// (https://etcd.io/docs/v3.6/op-guide/monitoring/#health-check). Both are served on the plain-HTTP
// metrics listener, so probes work the same with and without client TLS.
const (
	// probePeriodSeconds is how often liveness is probed.
	probePeriodSeconds int32 = 10
	// startupPeriodSeconds probes a starting member every second: the kubelet runs the first
	// readiness probe only after startup succeeds, so the startup period is added to every
	// member's time to Ready, and membership steps wait on that (docs/design/membership-flows.md).
	startupPeriodSeconds int32 = 1
	// startupFailureThreshold × startupPeriodSeconds (10 minutes) is how long a starting member
	// may spend replaying its WAL and loading a large backend before liveness takes over.
	startupFailureThreshold int32 = 600
	// livenessFailureThreshold restarts a member whose /livez has failed for 30 s.
	livenessFailureThreshold int32 = 3
	// readinessPeriodSeconds is short because a promoted learner (which failed /readyz while it
	// was a learner) becomes Ready only at its next readiness probe, and the next membership
	// step waits for that. With readinessFailureThreshold it takes a member that lost its leader
	// out of the client Service after 3 s, longer than an ordinary election (about 1 s).
	readinessPeriodSeconds int32 = 1
	// readinessFailureThreshold is the kubelet default, written out for stable comparisons.
	readinessFailureThreshold int32 = 3
	// probeTimeoutSeconds bounds one probe. /readyz performs a linearizable read, which waits
	// for a round trip to the leader; a 1 s default would flap on a slow disk.
	probeTimeoutSeconds int32 = 5
)

// Reference probe set for etcd < 3.5.11, which has only /health: /health fails whenever the
// cluster has no leader, so it cannot be used for liveness without restarting every member during
// a quorum loss; a TCP check on the peer port is the best liveness signal there is.
const (
	legacyLivenessInitialDelaySeconds  int32 = 15
	legacyLivenessPeriodSeconds        int32 = 10
	legacyReadinessInitialDelaySeconds int32 = 5
	legacyReadinessPeriodSeconds       int32 = 5
	legacyFailureThreshold             int32 = 3
	// legacyTimeoutSeconds is the kubelet default, written out for stable comparisons.
	legacyTimeoutSeconds int32 = 1
)

// probes returns the startup, liveness and readiness probes for a member of version v.
//
// Liveness is /livez and deliberately not quorum-aware: a member that cannot reach its peers is
// alive, and restarting it would not bring quorum back. Readiness is /readyz, which fails without
// a leader and, on recent etcd, for learners (they cannot serve linearizable reads), so learners
// are never endpoints even before the role label excludes them.
func probes(v etcdVersion) (startup, liveness, readiness *corev1.Probe) {
	if !v.atLeast(v3_5_11) {
		return nil,
			&corev1.Probe{
				ProbeHandler: corev1.ProbeHandler{
					TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(PeerPort)},
				},
				InitialDelaySeconds: legacyLivenessInitialDelaySeconds,
				PeriodSeconds:       legacyLivenessPeriodSeconds,
				TimeoutSeconds:      legacyTimeoutSeconds,
				SuccessThreshold:    1,
				FailureThreshold:    legacyFailureThreshold,
			},
			&corev1.Probe{
				ProbeHandler:        httpGet("/health"),
				InitialDelaySeconds: legacyReadinessInitialDelaySeconds,
				PeriodSeconds:       legacyReadinessPeriodSeconds,
				TimeoutSeconds:      legacyTimeoutSeconds,
				SuccessThreshold:    1,
				FailureThreshold:    legacyFailureThreshold,
			}
	}
	return &corev1.Probe{
			ProbeHandler:     httpGet("/livez"),
			PeriodSeconds:    startupPeriodSeconds,
			TimeoutSeconds:   probeTimeoutSeconds,
			SuccessThreshold: 1,
			FailureThreshold: startupFailureThreshold,
		},
		&corev1.Probe{
			ProbeHandler:     httpGet("/livez"),
			PeriodSeconds:    probePeriodSeconds,
			TimeoutSeconds:   probeTimeoutSeconds,
			SuccessThreshold: 1,
			FailureThreshold: livenessFailureThreshold,
		},
		&corev1.Probe{
			ProbeHandler:     httpGet("/readyz"),
			PeriodSeconds:    readinessPeriodSeconds,
			TimeoutSeconds:   probeTimeoutSeconds,
			SuccessThreshold: 1,
			FailureThreshold: readinessFailureThreshold,
		}
}

// httpGet is a plain-HTTP GET on the metrics port.
func httpGet(path string) corev1.ProbeHandler {
	return corev1.ProbeHandler{
		HTTPGet: &corev1.HTTPGetAction{
			Path:   path,
			Port:   intstr.FromInt32(MetricsPort),
			Scheme: corev1.URISchemeHTTP,
		},
	}
}
