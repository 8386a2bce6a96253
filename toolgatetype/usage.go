package toolgatetype

// Usage is a tool's usage as callers see it: coarse labels, and the exact
// counts only where the operator chose to show them.
type Usage struct {
	Count            *int64 `json:"count,omitempty"`
	UniqueUsers      *int64 `json:"uniqueUsers,omitempty"`
	Tracked          bool   `json:"tracked"`
	Coverage         string `json:"coverage"`
	InvocationsLabel string `json:"invocationsLabel"`
	UsersLabel       string `json:"usersLabel"`
}
