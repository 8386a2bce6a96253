package server

import (
	"fmt"
	"os"

	"github.com/toolgate/toolgate/registry"
)

// ManifestCheck is what checking one manifest found.
type ManifestCheck struct {
	// Line is "SLUG VERSION DIGEST" when the manifest is good.
	Line string
	// Errors are its mistakes, each naming the file.
	Errors []error
	// Credential says why its credential could not be read: no mistake in
	// the manifest, but the server refuses it until it can.
	Credential error
}

// ManifestChecker checks tool manifests as the server of a config would
// load them, without needing their credentials.
type ManifestChecker struct {
	origins map[string]string
	base    func() (*registry.Registry, error)
}

// NewManifestChecker reads what checking manifests needs of the config
// file at configPath: its "upstreams", whose plain-HTTP origins are then
// accepted and give the digest the server serves, and "builtinTools", for
// the registry the manifests join. With no configPath, the built-in tools
// and no upstreams.
func NewManifestChecker(configPath string) (*ManifestChecker, error) {
	if configPath == "" {
		return &ManifestChecker{origins: map[string]string{}, base: newRegistry}, nil
	}
	origins, base, err := configForCheck(configPath)
	if err != nil {
		return nil, err
	}
	return &ManifestChecker{origins: origins, base: base}, nil
}

// Check checks the manifest file, as the operator named it, reading its
// credential's environment variable with lookupEnv.
func (c *ManifestChecker) Check(file string, lookupEnv func(string) (string, bool)) ManifestCheck {
	return checkManifest(file, c.base, c.origins, lookupEnv)
}

// checkManifest checks one manifest as the server would load it, into a
// new registry from base (the built-in tools, unless the config leaves
// them out), without needing its credential, and describes the version it
// would register. Errors name the file as the operator typed it.
func checkManifest(file string, base func() (*registry.Registry, error), origins map[string]string, lookupEnv func(string) (string, bool)) ManifestCheck {
	fail := func(err error) ManifestCheck { return ManifestCheck{Errors: []error{err}} }
	data, err := os.ReadFile(file)
	if err != nil {
		return fail(fmt.Errorf("%s: cannot read the file: %s", file, statProblem(err)))
	}
	c := registry.CheckManifest(file, data, &registry.ParseOptions{OperatorOrigins: origins, LookupEnv: lookupEnv})
	var out ManifestCheck
	for _, e := range c.Errors {
		out.Errors = append(out.Errors, e)
	}
	if c.Credential != nil {
		out.Credential = c.Credential
	}
	if c.Tool == nil {
		return out
	}
	reg, err := base()
	if err != nil {
		return fail(err)
	}
	v, err := reg.RegisterManifestTool(file, c.Tool)
	if err != nil {
		out.Errors = append(out.Errors, err)
		return out
	}
	if origin, ok := origins[v.Tool.Slug]; ok {
		if err := reg.SetOrigin(v.Tool.Slug, origin); err != nil {
			out.Errors = append(out.Errors, fmt.Errorf("%s: upstreams.%s: %v", file, v.Tool.Slug, err))
			return out
		}
		if v, err = reg.Lookup(v.Tool.Slug); err != nil {
			return fail(err)
		}
	}
	out.Line = fmt.Sprintf("%s %d %s", v.Tool.Slug, v.Tool.Version, v.Digest)
	return out
}

func statProblem(err error) string {
	if os.IsNotExist(err) {
		return "no such file"
	}
	if os.IsPermission(err) {
		return "permission denied"
	}
	return "read error"
}

// configForCheck reads what checking a manifest needs of a config file:
// its "upstreams", and the registry its manifests join ("builtinTools").
// The rest of the file is not checked here.
func configForCheck(path string) (map[string]string, func() (*registry.Registry, error), error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, &ConfigError{Msg: "cannot read the config file: " + err.Error()}
	}
	var doc struct {
		BuiltinTools *bool              `json:"builtinTools"`
		Upstreams    map[string]*string `json:"upstreams"`
	}
	if err := decodeConfigPart(data, &doc); err != nil {
		return nil, nil, err
	}
	origins, err := operatorOrigins(doc.Upstreams)
	if err != nil {
		return nil, nil, err
	}
	reg := func() (*registry.Registry, error) { return builtinRegistry(doc.BuiltinTools) }
	if _, err := reg(); err != nil {
		return nil, nil, err
	}
	return origins, reg, nil
}
