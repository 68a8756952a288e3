package service

// PlanChange is what an update writes besides the plan's own columns.
type PlanChange struct {
	// Resolved, per resource position, is a re-detection's result. Only
	// targets with Checked set replace the stored join columns; the others
	// keep what was stored before.
	Resolved []ResolvedTarget
}
