package toolgate

// WaitBudgetAlerts lets the package's external tests wait for the budget
// checks their calls started, as waitBudgetAlerts does.
func (g *Gateway) WaitBudgetAlerts() { g.waitBudgetAlerts() }
