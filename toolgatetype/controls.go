package toolgatetype

// Controls is the spend-control decision for one call, as shown in a quote.
type Controls struct {
	Approved     bool           `json:"approved"`
	Violations   []string       `json:"violations"`
	RequestedUSD string         `json:"requestedUsd"`
	Global       GlobalControls `json:"global"`
	Tool         *ToolControls  `json:"tool"`
	// Budgets are the principal's budgets and their ancestors, nearest
	// first; absent when the principal counts in none.
	Budgets []Budget `json:"budgets,omitempty"`
}

// GlobalControls are a principal's limits over all tools, with what is used.
type GlobalControls struct {
	MaxPerCallUSD       string `json:"maxPerCallUsd"`
	DailyLimitUSD       string `json:"dailyLimitUsd"`
	MonthlyLimitUSD     string `json:"monthlyLimitUsd"`
	RateLimitPerMinute  int    `json:"rateLimitPerMinute"`
	RateLimitPerHour    int    `json:"rateLimitPerHour"`
	DailyUsedUSD        string `json:"dailyUsedUsd"`
	MonthlyUsedUSD      string `json:"monthlyUsedUsd"`
	DailyRemainingUSD   string `json:"dailyRemainingUsd"`
	MonthlyRemainingUSD string `json:"monthlyRemainingUsd"`
}

// ToolControls are a principal's limits on one tool; unset limits are null.
type ToolControls struct {
	Allowed             bool    `json:"allowed"`
	MaxPerCallUSD       *string `json:"maxPerCallUsd"`
	DailyLimitUSD       *string `json:"dailyLimitUsd"`
	MonthlyLimitUSD     *string `json:"monthlyLimitUsd"`
	RateLimitPerMinute  *int    `json:"rateLimitPerMinute"`
	RateLimitPerHour    *int    `json:"rateLimitPerHour"`
	DailyUsedUSD        string  `json:"dailyUsedUsd"`
	MonthlyUsedUSD      string  `json:"monthlyUsedUsd"`
	DailyRemainingUSD   *string `json:"dailyRemainingUsd"`
	MonthlyRemainingUSD *string `json:"monthlyRemainingUsd"`
}
