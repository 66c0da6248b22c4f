package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// iptablesTables are the tables kube-proxy and the kubelets write to.
var iptablesTables = []string{"filter", "nat", "mangle"}

// removeKubeChains deletes every rule that jumps to a KUBE-* chain and every KUBE-* chain, in
// both address families. kube-proxy --cleanup removes kube-proxy's own chains but not the ones
// each kubelet creates (KUBE-FIREWALL, KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT). On this
// machine only the local cluster creates KUBE-* chains.
func removeKubeChains(ctx context.Context) error {
	var errs []error
	for _, family := range []string{"iptables", "ip6tables"} {
		for _, table := range iptablesTables {
			out, err := runTool(ctx, family+"-save", "-t", table)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			rules, chains := kubeRulesAndChains(out)
			for _, rule := range rules {
				if _, err := runTool(ctx, family, append([]string{"-t", table, "-D"}, rule...)...); err != nil {
					errs = append(errs, err)
				}
			}
			// Flush all before deleting any: KUBE chains jump to each other.
			for _, op := range []string{"-F", "-X"} {
				for _, chain := range chains {
					if _, err := runTool(ctx, family, "-t", table, op, chain); err != nil {
						errs = append(errs, err)
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// kubeRulesAndChains parses iptables-save output into the rules of built-in (non-KUBE) chains
// that mention a KUBE-* chain, as arguments for `iptables -D`, and the KUBE-* chains.
func kubeRulesAndChains(save string) (rules [][]string, chains []string) {
	for _, line := range strings.Split(save, "\n") {
		switch {
		case strings.HasPrefix(line, ":KUBE-"):
			chains = append(chains, strings.Fields(line[1:])[0])
		case strings.HasPrefix(line, "-A ") && !strings.HasPrefix(line, "-A KUBE-") && strings.Contains(line, "KUBE-"):
			if args, err := splitRule(strings.TrimPrefix(line, "-A ")); err == nil {
				rules = append(rules, args)
			}
		}
	}
	return rules, chains
}

// splitRule splits an iptables-save rule into arguments, honouring double quotes (comments).
func splitRule(s string) ([]string, error) {
	var (
		args    []string
		cur     strings.Builder
		quoted  bool
		started bool
	)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\\' && quoted && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case ch == '"':
			quoted = !quoted
			started = true
		case ch == ' ' && !quoted:
			if started {
				args = append(args, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteByte(ch)
			started = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unbalanced quotes in %q", s)
	}
	if started {
		args = append(args, cur.String())
	}
	return args, nil
}
