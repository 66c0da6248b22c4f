package framework

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strings"
)

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// NamespaceName derives a namespace name from a test name: "e2e-", the test name lowercased
// with other characters turned into dashes, and a random suffix so reruns never collide with
// a namespace still terminating. The result is a valid DNS-1123 label (at most 63 characters).
func NamespaceName(testName string) string {
	const prefix, maxLen, suffixLen = "e2e-", 63, 6
	body := nonDNS.ReplaceAllString(strings.ToLower(testName), "-")
	body = strings.Trim(body, "-")
	if limit := maxLen - len(prefix) - 1 - suffixLen; len(body) > limit {
		body = strings.TrimRight(body[:limit], "-")
	}
	b := make([]byte, suffixLen/2)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	if body == "" {
		return prefix + hex.EncodeToString(b)
	}
	return prefix + body + "-" + hex.EncodeToString(b)
}

// ArtifactName turns a test name into a folder name: subtests become nested folders, other
// characters that are unsafe in paths become underscores.
func ArtifactName(testName string) string {
	parts := strings.Split(testName, "/")
	for i, p := range parts {
		p = strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
				return r
			default:
				return '_'
			}
		}, p)
		if p == "" || p == "." || p == ".." {
			p = "_"
		}
		parts[i] = p
	}
	return strings.Join(parts, "/")
}

var nonLabel = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// ArtifactLabel turns a test name into a valid label value (at most 63 characters, starting and
// ending with an alphanumeric), so namespaces can be traced back to their test.
func ArtifactLabel(testName string) string {
	v := nonLabel.ReplaceAllString(testName, "_")
	if len(v) > 63 {
		v = v[:63]
	}
	return strings.Trim(v, "._-")
}
