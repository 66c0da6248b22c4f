package operator

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
)

func TestNewLogger(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		opts       LogOptions
		wantLines  int
		wantFormat LogFormat
	}{
		{name: "info drops V(1)", opts: LogOptions{Level: zapcore.InfoLevel, Format: LogFormatJSON}, wantLines: 2, wantFormat: LogFormatJSON},
		{name: "debug keeps V(1)", opts: LogOptions{Level: zapcore.DebugLevel, Format: LogFormatJSON}, wantLines: 3, wantFormat: LogFormatJSON},
		{name: "error keeps errors only", opts: LogOptions{Level: zapcore.ErrorLevel, Format: LogFormatJSON}, wantLines: 1, wantFormat: LogFormatJSON},
		{name: "console", opts: LogOptions{Level: zapcore.InfoLevel, Format: LogFormatConsole}, wantLines: 2, wantFormat: LogFormatConsole},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			log := NewLogger(tt.opts, &buf)
			log.Info("Member added", "memberID", "8e9e05c52164694d")
			log.V(1).Info("Polling member")
			log.Error(errors.New("learner not in sync"), "Adding learner")

			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if len(lines) != tt.wantLines {
				t.Fatalf("got %d lines, want %d:\n%s", len(lines), tt.wantLines, buf.String())
			}
			for _, line := range lines {
				var record map[string]any
				err := json.Unmarshal([]byte(line), &record)
				if isJSON := err == nil; isJSON != (tt.wantFormat == LogFormatJSON) {
					t.Fatalf("line %q: JSON = %t, want format %s", line, isJSON, tt.wantFormat)
				}
				if tt.wantFormat != LogFormatJSON {
					continue
				}
				for _, key := range []string{"ts", "level", "msg"} {
					if _, ok := record[key]; !ok {
						t.Errorf("record %q lacks %q", line, key)
					}
				}
				if _, ok := record["stacktrace"]; ok {
					t.Errorf("record %q carries a stack trace; errors should not", line)
				}
			}
		})
	}
}
