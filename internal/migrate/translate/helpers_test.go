package translate_test

import (
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/migrate/translate"
	"github.com/etcd-operator/etcd-operator/test/utils/legacyfixture"
)

// inspected is the healthy input of a fixture cluster, and the fixture itself.
func inspected(tb testing.TB, o legacyfixture.Options, cfg translate.Config) (translate.Input, *legacyfixture.Set) {
	tb.Helper()
	s, err := legacyfixture.Build(o)
	if err != nil {
		tb.Fatal(err)
	}
	in, err := s.Inspected(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return in, s
}

func codes(fs []translate.Finding) []translate.Code {
	out := []translate.Code{}
	for _, f := range fs {
		out = append(out, f.Code)
	}
	return out
}

func find(fs []translate.Finding, code translate.Code) (translate.Finding, bool) {
	for _, f := range fs {
		if f.Code == code {
			return f, true
		}
	}
	return translate.Finding{}, false
}

func hasCode(fs []translate.Finding, code translate.Code) bool {
	_, ok := find(fs, code)
	return ok
}
