package server

import "github.com/toolgate/toolgate/internal/weburl"

// allowedHosts parses "allowedHosts": the names, besides loopback's and the
// host of approvals.publicUrl, that requests to /mcp may give as their Host
// or Origin (a reverse proxy's, say). Each is a host name or IP address
// with an optional port.
func (configParser) allowedHosts(n node) ([]string, error) {
	items, err := n.items()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for _, item := range items {
		h, err := item.str()
		if err != nil {
			return nil, err
		}
		if !weburl.HostPort(h) {
			return nil, item.errorf("%q is not a host name or IP address with an optional port (\"mcp.example.com\", \"10.0.0.5:8080\"); give no scheme or path", h)
		}
		out = append(out, h)
	}
	return out, nil
}
