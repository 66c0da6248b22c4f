package monitoring

import (
	"strings"
)

// metricNames returns the metric names a PromQL expression selects, found by a small lexer
// rather than Prometheus's parser: github.com/prometheus/prometheus would pull Kubernetes
// libraries two minors ahead of the operator's into go.mod (docs/monitoring.md, "Dashboard").
// promtool parses every query as well (TestDashboardQueriesParse), so a query this lexer
// misreads still fails there. The lexer errs towards reporting an identifier as a metric name:
// an unknown word fails the check instead of passing unseen.
//
// It skips string literals, label matchers ({...}), ranges and subqueries ([...]), numbers and
// durations, keywords, aggregation operators, function names (an identifier followed by '('),
// and the label lists of by, without, on, ignoring, group_left and group_right.
func metricNames(expr string) []string {
	var out []string
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(expr, i)
		case c == '{':
			i = skipTo(expr, i, '}')
		case c == '[':
			i = skipTo(expr, i, ']')
		case isDigit(c) || c == '.' && i+1 < len(expr) && isDigit(expr[i+1]):
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case isIdentStart(c):
			start := i
			for i < len(expr) && isIdent(expr[i]) {
				i++
			}
			word := expr[start:i]
			next := nextNonSpace(expr, i)
			switch {
			case labelListKeywords[word]:
				if next < len(expr) && expr[next] == '(' {
					i = skipTo(expr, next, ')')
				}
			case keywords[word] || aggregations[word]:
			case next < len(expr) && expr[next] == '(':
				// a function call
			default:
				out = append(out, word)
			}
		default:
			i++
		}
	}
	return out
}

// labelListKeywords are followed by a parenthesised list of label names.
var labelListKeywords = set("by", "without", "on", "ignoring", "group_left", "group_right")

var keywords = set("and", "or", "unless", "bool", "offset", "atan2", "inf", "nan", "Inf", "NaN")

var aggregations = set("sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
	"bottomk", "topk", "quantile", "limitk", "limit_ratio")

func set(words ...string) map[string]bool {
	m := map[string]bool{}
	for _, w := range words {
		m[w] = true
	}
	return m
}

func skipString(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q != '`':
			i++
		case s[i] == q:
			return i + 1
		}
	}
	return i
}

// skipTo returns the index after the first close at or after i, skipping strings.
func skipTo(s string, i int, closing byte) int {
	for i++; i < len(s); {
		switch s[i] {
		case '"', '\'', '`':
			i = skipString(s, i)
		case closing:
			return i + 1
		default:
			i++
		}
	}
	return i
}

func nextNonSpace(s string, i int) int {
	for i < len(s) && strings.ContainsRune(" \t\r\n", rune(s[i])) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
func isIdent(c byte) bool { return isIdentStart(c) || isDigit(c) }
