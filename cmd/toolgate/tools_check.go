package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/toolgate/toolgate/registry"
)

// runTools is "toolgate tools": for now one command, check.
//
//	toolgate tools check [-config FILE] MANIFEST...
//
// check validates each manifest as the server would load it (beside the
// built-in tools, credentials read from the environment or their files)
// and prints "SLUG VERSION DIGEST" for each good one on stdout, and
// "toolgate: FILE: PATH: REASON" for each bad one on stderr. With -config,
// the config's "upstreams" apply, as on the server: a plain-HTTP origin it
// names is accepted, and the digest is the one the server serves. Exit 0
// when every manifest is good, 1 when any is not, 2 for a usage mistake.
func runTools(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(stderr, "toolgate: usage: toolgate tools check [-config FILE] MANIFEST...")
		return exitUsage
	}
	fs := flag.NewFlagSet("toolgate tools check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "apply the `file`'s upstreams, as the server would")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: toolgate tools check [-config FILE] MANIFEST...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "toolgate: tools check: name at least one manifest file")
		return exitUsage
	}
	origins := map[string]string{}
	if *configPath != "" {
		var err error
		if origins, err = configOrigins(*configPath); err != nil {
			fmt.Fprintf(stderr, "toolgate: %s: %v\n", *configPath, err)
			return exitUsage
		}
	}

	code := exitOK
	for _, file := range fs.Args() {
		line, err := checkManifest(file, origins)
		if err != nil {
			fmt.Fprintf(stderr, "toolgate: %v\n", err)
			code = exitFailed
			continue
		}
		fmt.Fprintln(stdout, line)
	}
	return code
}

// checkManifest loads one manifest into a registry of the built-in tools,
// as the server's would be, and describes the version it registered.
func checkManifest(file string, origins map[string]string) (string, error) {
	reg, err := newRegistry()
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", fmt.Errorf("%s: %v", file, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("%s: cannot read the file: %s", file, statProblem(err))
	}
	pattern := filepath.Join(filepath.Dir(abs), globEscape(filepath.Base(abs)))
	vs, err := registerManifests(reg, []string{pattern}, origins)
	if err != nil {
		var me *registry.ManifestError
		if errors.As(err, &me) {
			named := *me
			named.File = file // as the operator typed it
			return "", &named
		}
		return "", fmt.Errorf("%s: %v", file, err)
	}
	v := vs[0]
	if origin, ok := origins[v.Tool.Slug]; ok {
		if err := reg.SetOrigin(v.Tool.Slug, origin); err != nil {
			return "", fmt.Errorf("%s: upstreams.%s: %v", file, v.Tool.Slug, err)
		}
		if v, err = reg.Lookup(v.Tool.Slug); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%s %d %s", v.Tool.Slug, v.Tool.Version, v.Digest), nil
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

// configOrigins reads the "upstreams" of a config file.
func configOrigins(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{Msg: "cannot read the config file: " + err.Error()}
	}
	root, err := parseDocument(data)
	if err != nil {
		return nil, err
	}
	return operatorOrigins(root)
}
