package agentenv

// EnvTerminationMessagePath names the file that receives an agent's result: the container's
// terminationMessagePath, which the kubelet copies into the Pod's status.
const EnvTerminationMessagePath = "TERMINATION_MESSAGE_PATH"

// DefaultTerminationMessagePath is the kubelet's default terminationMessagePath.
const DefaultTerminationMessagePath = "/dev/termination-log"

// TerminationMessagePath is where the agent writes its result: EnvTerminationMessagePath, or
// the kubelet's default when it is unset. An agent whose environment does not parse still
// reports there.
func TerminationMessagePath(lookup func(string) (string, bool)) string {
	if v := NewParser(lookup).Optional(EnvTerminationMessagePath); v != "" {
		return v
	}
	return DefaultTerminationMessagePath
}
