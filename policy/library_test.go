package policy

import (
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/api/validation"
)

// TestLibrary runs every Rego unit test of the bundled library with OPA's test runner.
func TestLibrary(t *testing.T) {
	results, err := RunTests(t.Context(), TestOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, results)
	for _, r := range results {
		t.Run(strings.TrimPrefix(r.Package, "driverguard.lib.")+"/"+r.Name, func(t *testing.T) {
			assert.Equal(t, TestPass, r.Outcome, "%s:%d %s %s\n%s", r.File, r.Line, r.Error, r.Name, r.Output)
		})
	}
}

// TestLibraryRulesHavePositiveAndNegativeTests: every bundled policy has tests in
// driverguard.lib.<rule>_test that expect it to fire (test_deny_*, test_warn_*) and tests that
// expect it to stay quiet (test_ok_*).
func TestLibraryRulesHavePositiveAndNegativeTests(t *testing.T) {
	lib, err := library()
	require.NoError(t, err)
	pkgs, problems := policyPackages(lib.policies)
	require.Empty(t, problems)
	require.Len(t, pkgs, 8, "a new bundled rule? add it to docs/policy-authoring.md too")
	tests := map[string][]string{}
	for _, m := range lib.tests {
		pkg := strings.TrimPrefix(m.Package.Path.String(), "data.")
		for _, r := range m.Rules {
			tests[pkg] = append(tests[pkg], r.Head.Ref()[0].String())
		}
	}
	for _, p := range pkgs {
		t.Run(p.name, func(t *testing.T) {
			var positive, negative int
			for _, name := range tests[p.pkg+"_test"] {
				switch {
				case strings.HasPrefix(name, "test_deny_") || strings.HasPrefix(name, "test_warn_"):
					positive++
				case strings.HasPrefix(name, "test_ok_"):
					negative++
				}
			}
			assert.Positive(t, positive, "no test_deny_/test_warn_ test")
			assert.Positive(t, negative, "no test_ok_ test")
			for _, rule := range p.rules {
				found := false
				for _, name := range tests[p.pkg+"_test"] {
					found = found || strings.HasPrefix(name, "test_"+rule+"_")
				}
				assert.True(t, found, "no test_%s_ test for its %s rule", rule, rule)
			}
		})
	}
}

func TestLibraryPolicyNames(t *testing.T) {
	lib, err := library()
	require.NoError(t, err)
	pkgs, _ := policyPackages(lib.policies)
	var names []string
	for _, p := range pkgs {
		names = append(names, p.name)
	}
	assert.Equal(t, []string{
		"lib.allowed_registries", "lib.canary_selector", "lib.drain_empty_dir", "lib.family_in_image",
		"lib.kernel_tag", "lib.manager_version", "lib.max_parallel_upgrades", "lib.pinned_version",
	}, names)
}

// TestLibraryTagPatternIsGos: kernel_tag judges a pool's tag with the OCI tag grammar routing
// composes images with (api/validation.TagPattern). Routing marks such a pool InvalidImageTag
// but judges no RBLNDriver for it, so the rule is the library's; its grammar is Go's.
func TestLibraryTagPatternIsGos(t *testing.T) {
	lib, err := library()
	require.NoError(t, err)
	var pattern ast.Value
	for _, r := range lib.policies[bundledPrefix+"util.rego"].Rules {
		if r.Head.Name.String() == "oci_tag_pattern" {
			pattern = r.Head.Value.Value
		}
	}
	assert.Equal(t, ast.String(validation.TagPattern), pattern)
	src, err := libraryFS.ReadFile("library/kernel_tag.rego")
	require.NoError(t, err)
	assert.Contains(t, string(src), "`"+validation.TagPattern+"`", "kernel_tag writes util.oci_tag_pattern out")
}
