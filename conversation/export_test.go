package conversation

// The package's tests are in package conversation_test; these give them
// the helpers they check directly.
var (
	CheckRemember  = checkRemember
	PruneRecent    = pruneRecent
	ClipRecentText = clipRecentText
	CheckAddUsage  = checkAddUsage
	About          = about
	Repair         = repair
	Sanitize       = sanitize
)
