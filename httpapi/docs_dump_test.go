package httpapi_test

import (
	"os"
	"testing"
)

func TestZZDump(t *testing.T) {
	if os.Getenv("DOCS_DUMP") == "" {
		t.Skip()
	}
	srv := newDocsServer(t, hostileTool(), legacySchemaTool())
	for name, path := range map[string]string{
		"quake.txt": "/v1/registry/tools/earthquake-search/llms.txt",
		"hostile.txt": "/v1/registry/tools/hostile-tool/llms.txt",
		"index.txt": "/v1/registry/llms.txt",
		"quake.docs.json": "/v1/registry/tools/earthquake-search/docs",
		"weather.openapi.json": "/v1/registry/tools/current-weather/openapi.json",
		"legacy.openapi.json": "/v1/registry/tools/legacy-schemas/openapi.json",
		"quake.html": "/tools/earthquake-search",
		"hostile.html": "/tools/hostile-tool",
		"versions.json": "/v1/registry/tools/goal-data/versions",
	} {
		os.WriteFile("/tmp/docsdump/"+name, srv.get(t, path).body, 0o644)
	}
}
