package toolgatetype

// NormalizedCapabilities is the capability set with every default applied,
// as it appears in registry entries and in the manifest.
type NormalizedCapabilities struct {
	Declared               bool     `json:"declared"`
	ReadOnly               bool     `json:"readOnly"`
	Destructive            bool     `json:"destructive"`
	Idempotent             bool     `json:"idempotent"`
	OpenWorld              bool     `json:"openWorld"`
	ReadsPrivateData       bool     `json:"readsPrivateData"`
	SeesUntrustedContent   bool     `json:"seesUntrustedContent"`
	WritesExternalData     bool     `json:"writesExternalData"`
	SendsMessages          bool     `json:"sendsMessages"`
	SpendsMoney            bool     `json:"spendsMoney"`
	ExecutesCode           bool     `json:"executesCode"`
	RequiresUserCredential bool     `json:"requiresUserCredential"`
	AllowedOutboundDomains []string `json:"allowedOutboundDomains"`
	DataRetention          string   `json:"dataRetention"`
}
