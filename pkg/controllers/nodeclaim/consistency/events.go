package consistency

// ReasonFailedConsistencyCheck is the reason of the warning event recorded
// on a NodeClaim for each issue a check finds (upstream's reason).
const ReasonFailedConsistencyCheck = "FailedConsistencyCheck"

// Condition reason and message of ConsistentStateFound=False, as upstream
// writes them.
const (
	reasonConsistencyCheckFailed  = "ConsistencyCheckFailed"
	messageConsistencyCheckFailed = "Consistency Check Failed"
)
