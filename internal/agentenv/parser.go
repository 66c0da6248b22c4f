package agentenv

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ConfigError names an environment variable and what is wrong with it.
type ConfigError struct {
	// Var is the environment variable.
	Var string
	// Problem says what is wrong, e.g. "is required".
	Problem string
}

func (e *ConfigError) Error() string { return e.Var + " " + e.Problem }

// Problems lists every problem of an environment on one line, as a condition message shows it
// best.
type Problems []error

func (e Problems) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap gives errors.As each *ConfigError.
func (e Problems) Unwrap() []error { return e }

// Parser reads variables through a lookup function (os.LookupEnv in an agent) and collects
// every problem instead of stopping at the first, so that one failed run shows the whole list.
type Parser struct {
	lookup   func(string) (string, bool)
	problems Problems
}

// NewParser returns a parser reading through lookup.
func NewParser(lookup func(string) (string, bool)) *Parser {
	return &Parser{lookup: lookup}
}

// Err is nil when no variable had a problem, else the Problems.
func (p *Parser) Err() error {
	if len(p.problems) == 0 {
		return nil
	}
	return p.problems
}

// Fail records that variable name has problem.
func (p *Parser) Fail(name, problem string) {
	p.problems = append(p.problems, &ConfigError{Var: name, Problem: problem})
}

// Check records problem for variable name unless ok.
func (p *Parser) Check(name string, ok bool, problem string) {
	if !ok {
		p.Fail(name, problem)
	}
}

// Raw is the variable's value as set, untrimmed; "" when unset.
func (p *Parser) Raw(name string) string {
	v, _ := p.lookup(name)
	return v
}

// Optional is the variable's value without surrounding white space; "" when unset.
func (p *Parser) Optional(name string) string {
	return strings.TrimSpace(p.Raw(name))
}

// Required is Optional, recording a problem when the value is empty.
func (p *Parser) Required(name string) string {
	v := p.Optional(name)
	if v == "" {
		p.Fail(name, "is required")
	}
	return v
}

// Duration reads a positive Go duration; def when unset or invalid. example, such as "30m",
// shows a valid value in the problem.
func (p *Parser) Duration(name string, def time.Duration, example string) time.Duration {
	v := p.Optional(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		p.Fail(name, fmt.Sprintf("must be a positive duration such as %s, not %q", example, v))
		return def
	}
	return d
}

// Bool reads true or false (strconv.ParseBool); false when unset.
func (p *Parser) Bool(name string) bool {
	v := p.Optional(name)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		p.Fail(name, fmt.Sprintf("must be true or false, not %q", v))
	}
	return b
}

// Credential reads a value given inline (variable inline) or as a file to read (variable
// file), not both. Inline values are not trimmed: a password may end in a space.
func (p *Parser) Credential(inline, file string) Credential {
	c := Credential{Value: Secret(p.Raw(inline)), File: p.Optional(file)}
	if c.Value != "" && c.File != "" {
		p.Fail(inline, "and "+file+" must not both be set")
	}
	return c
}
