package oauth_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/oauth"
)

// A verifier for an identity provider's tokens, and what a client refused
// without one is told: where the resource metadata that names the
// provider is, and the metadata itself.
func Example() {
	v, err := oauth.New(&oauth.Config{
		Issuer:        "https://idp.example.com/realms/acme",
		Audience:      "https://toolgate.example.com/mcp",
		ApproverClaim: "toolgate_approver",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(apikey.Challenge(v.ResourceMetadataURL(), "", "", ""))

	mux := http.NewServeMux()
	mux.Handle(oauth.MetadataPath, v.MetadataHandler("/mcp"))
	mux.Handle(oauth.MetadataPath+"/", v.MetadataHandler("/mcp"))
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, oauth.MetadataPath+"/mcp", nil))
	fmt.Print(w.Body.String())
	// Output:
	// Bearer resource_metadata="https://toolgate.example.com/.well-known/oauth-protected-resource/mcp"
	// {"resource":"https://toolgate.example.com/mcp","authorization_servers":["https://idp.example.com/realms/acme"],"scopes_supported":["toolgate:call","toolgate:approve"],"bearer_methods_supported":["header"],"resource_name":"toolgate"}
}
