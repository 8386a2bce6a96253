package server

import "github.com/toolgate/toolgate/internal/weburl"

// allowedHosts checks "allowedHosts": the names, besides loopback's and the
// host of approvals.publicUrl, that requests to /mcp may give as their Host
// or Origin (a reverse proxy's, say). Each is a host name or IP address
// with an optional port.
func allowedHosts(path string, in []str) ([]string, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]string, 0, len(in))
	for i, h := range strs(in) {
		if !weburl.HostPort(h) {
			return nil, errorf(index(path, i), "%q is not a host name or IP address with an optional port (\"mcp.example.com\", \"10.0.0.5:8080\"); give no scheme or path", h)
		}
		out = append(out, h)
	}
	return out, nil
}
