package toolgatetype

// ApprovalMode says who approves a principal's calls.
type ApprovalMode string

// ToolApproval is a standing approval together with the tool it covers.
type ToolApproval struct {
	Tool ToolRef `json:"tool"`
	StandingApproval
}

// ApprovalKind is how an admitted call was approved.
type ApprovalKind string

// ApprovalMode is how a standing approval treats future calls.
type StandingMode string
