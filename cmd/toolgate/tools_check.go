package main

import (
	"context"
	"fmt"
	"os"

	"github.com/toolgate/toolgate/registry"
)

// toolsCheckCommand is "toolgate tools check".
var toolsCheckCommand = &command{
	name:     "tools check",
	synopsis: "[-config FILE] [-strict] MANIFEST...",
	summary:  "check tool manifests as the server would load them, listing every mistake",
	about: `Checks each manifest as the server would load it, beside the built-in tools,
and prints "SLUG VERSION DIGEST" for each good one on stdout, and each
mistake of each bad one as "toolgate: FILE: PATH: REASON" on stderr.

A manifest's credential is not needed to check it: when the environment
variable or file it names is not set or cannot be read, that is a warning
("toolgate: warning: FILE: PATH: REASON"; the server will refuse the
manifest until it is), unless -strict makes it a mistake.

With -config, the config's "upstreams" apply, as on the server: a
plain-HTTP origin it names is accepted, and the digest is the one the
server serves. Exit 0 when every manifest is good, 1 when any is not,
2 for a mistake in the command line.`,
	run: runToolsCheck,
}

// runToolsCheck is "toolgate tools check".
func runToolsCheck(_ context.Context, c *cli, cmd *command, args []string) int {
	fs := c.flagSet(cmd)
	configPath := fs.String("config", "", "apply the `file`'s upstreams, as the server would")
	strict := fs.Bool("strict", false, "count a credential that cannot be read as a mistake, not a warning")
	if code, ok := c.parse(cmd, fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		c.mistake(cmd, fmt.Errorf("name at least one manifest file"))
		return exitUsage
	}
	origins := map[string]string{}
	base := newRegistry
	if *configPath != "" {
		var err error
		if origins, base, err = configForCheck(*configPath); err != nil {
			fmt.Fprintf(c.stderr, "toolgate: %s: %v\n", *configPath, err)
			return exitUsage
		}
	}
	lookupEnv := func(name string) (string, bool) {
		v := c.getenv(name)
		return v, v != ""
	}

	code := exitOK
	for _, file := range fs.Args() {
		res := checkManifest(file, base, origins, lookupEnv)
		for _, err := range res.errors {
			fmt.Fprintf(c.stderr, "toolgate: %v\n", err)
		}
		if res.credential != nil {
			if *strict {
				fmt.Fprintf(c.stderr, "toolgate: %v\n", res.credential)
				res.errors = append(res.errors, res.credential)
			} else {
				fmt.Fprintf(c.stderr, "toolgate: warning: %v (the server refuses this manifest until it can read its credential)\n", res.credential)
			}
		}
		if len(res.errors) > 0 {
			code = exitFailed
			continue
		}
		fmt.Fprintln(c.stdout, res.line)
	}
	return code
}

// manifestCheck is what checking one manifest found: its line
// ("SLUG VERSION DIGEST") when good, its mistakes, and why its credential
// could not be read.
type manifestCheck struct {
	line       string
	errors     []error
	credential error
}

// checkManifest checks one manifest as the server would load it, into a
// new registry from base (the built-in tools, unless the config leaves
// them out), without needing its credential, and describes the version it
// would register. Errors name the file as the operator typed it.
func checkManifest(file string, base func() (*registry.Registry, error), origins map[string]string, lookupEnv func(string) (string, bool)) manifestCheck {
	fail := func(err error) manifestCheck { return manifestCheck{errors: []error{err}} }
	data, err := os.ReadFile(file)
	if err != nil {
		return fail(fmt.Errorf("%s: cannot read the file: %s", file, statProblem(err)))
	}
	c := registry.CheckManifest(file, data, &registry.ParseOptions{OperatorOrigins: origins, LookupEnv: lookupEnv})
	var out manifestCheck
	for _, e := range c.Errors {
		out.errors = append(out.errors, e)
	}
	if c.Credential != nil {
		out.credential = c.Credential
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
		out.errors = append(out.errors, err)
		return out
	}
	if origin, ok := origins[v.Tool.Slug]; ok {
		if err := reg.SetOrigin(v.Tool.Slug, origin); err != nil {
			out.errors = append(out.errors, fmt.Errorf("%s: upstreams.%s: %v", file, v.Tool.Slug, err))
			return out
		}
		if v, err = reg.Lookup(v.Tool.Slug); err != nil {
			return fail(err)
		}
	}
	out.line = fmt.Sprintf("%s %d %s", v.Tool.Slug, v.Tool.Version, v.Digest)
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
func configForCheck(path string) (map[string]string, func() (*registry.Registry, error), error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, &ConfigError{Msg: "cannot read the config file: " + err.Error()}
	}
	root, err := parseDocument(data)
	if err != nil {
		return nil, nil, err
	}
	origins, err := operatorOrigins(root)
	if err != nil {
		return nil, nil, err
	}
	if _, err := configRegistry(data); err != nil {
		return nil, nil, err
	}
	return origins, func() (*registry.Registry, error) { return configRegistry(data) }, nil
}
