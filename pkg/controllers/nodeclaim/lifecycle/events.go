package lifecycle

// Event reasons the lifecycle publishes on NodeClaims (and Nodes).
const (
	ReasonLaunched                  = "Launched"
	ReasonRegistered                = "Registered"
	ReasonInitialized               = "Initialized"
	ReasonInsufficientCapacityError = "InsufficientCapacityError"
	ReasonNodeClassNotReady         = "NodeClassNotReady"
	ReasonUnregisteredTaintMissing  = "UnregisteredTaintMissing"
	ReasonLaunchTimeout             = "LaunchTimeout"
	ReasonRegistrationTimeout       = "RegistrationTimeout"
)

// maxMessageLength bounds condition and event messages (provider errors
// can be long).
const maxMessageLength = 300

func truncate(s string) string {
	if len(s) <= maxMessageLength {
		return s
	}
	return s[:maxMessageLength-3] + "..."
}
