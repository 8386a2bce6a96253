package mcpupstream

import (
	"github.com/toolgate/toolgate/internal/redact"
	"github.com/toolgate/toolgate/registry"
)

// A server's secrets (its credential and the environment values read from
// the gateway's environment or files) are taken out of what its upstream
// sends back, which may echo them: outputs, error messages, log messages.
// The taking out is the registry's manifest tools' too (internal/redact):
// found with invisible characters inside, before a message is cut, and
// again, as any run of a secret, after.

// excerpt is provider text fit for a message (registry.Excerpt) without
// the secrets.
func excerpt(secrets *redact.Secrets, s string) string {
	return secrets.Excerpt(s, func(s string) string { return registry.Excerpt([]byte(s)) })
}
