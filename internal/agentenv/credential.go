package agentenv

// Secret is a credential read from the environment. It prints as "[redacted]", so a
// configuration logged or formatted by mistake does not carry it.
type Secret string

// String implements fmt.Stringer.
func (Secret) String() string { return "[redacted]" }

// GoString implements fmt.GoStringer.
func (Secret) GoString() string { return "[redacted]" }

// Credential is a value given either inline (an environment variable) or as a file to read,
// such as a mounted Secret key. At most one of the two is set.
type Credential struct {
	// Value is the inline value.
	Value Secret
	// File is the file that holds the value.
	File string
}

// IsSet reports whether either form is given.
func (c Credential) IsSet() bool { return c.Value != "" || c.File != "" }
