package invocation

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// TerminalPrompter asks on the terminal: the question on ErrOut, the answer from In.
type TerminalPrompter struct {
	In     *os.File
	ErrOut io.Writer
}

// Interactive reports whether In is a terminal.
func (t TerminalPrompter) Interactive() bool {
	fi, err := t.In.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Confirm asks question with [y/N]; only y or yes is yes.
func (t TerminalPrompter) Confirm(question string) (bool, error) {
	_, _ = fmt.Fprintf(t.ErrOut, "%s [y/N] ", question)
	line, err := bufio.NewReader(t.In).ReadString('\n')
	if err != nil && line == "" {
		return false, nil
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	default:
		return false, nil
	}
}
