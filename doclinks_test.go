package toolgate_test

import (
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rootDocs is the root package as godoc reads it: its files, tests left out.
func rootDocs(t *testing.T) *doc.Package {
	t.Helper()
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, module)
	require.NoError(t, err)
	return p
}

// unqualifiedError is the error type named as if the root package had it.
var unqualifiedError = regexp.MustCompile(`(^|[^.\w\[])\*?Error\b`)

// The error a caller matches lives in toolgatetype: the root package's
// documentation names it there, and its link leads to it.
func TestRootDocsNameTheErrorWhereItLives(t *testing.T) {
	t.Parallel()
	p := rootDocs(t)
	docs := map[string]string{"package toolgate": p.Doc}
	for _, f := range p.Funcs {
		docs[f.Name] = f.Doc
	}
	for _, ty := range p.Types {
		docs[ty.Name] = ty.Doc
		for _, f := range append(ty.Funcs, ty.Methods...) {
			docs[ty.Name+"."+f.Name] = f.Doc
		}
	}
	for name, text := range docs {
		for _, line := range strings.Split(text, "\n") {
			assert.NotRegexp(t, unqualifiedError, line, "%s names an Error the root package does not have", name)
		}
	}

	var linked bool
	for _, block := range p.Parser().Parse(p.Doc).Content {
		para, ok := block.(*comment.Paragraph)
		if !ok {
			continue
		}
		for _, text := range para.Text {
			if l, ok := text.(*comment.DocLink); ok && l.ImportPath == module+"/toolgatetype" && l.Name == "Error" {
				linked = true
			}
		}
	}
	assert.True(t, linked, "the package doc links to toolgatetype.Error")
}
