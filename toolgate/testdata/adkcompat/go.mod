// An ADK-Go v2.2.0 program beside this module, built by
// toolgate.TestADKBuildsBesideTheCore in a copy whose replace names the
// checkout (the module is not published); it has no other replace.
module example.com/adkcompat

go 1.26.5

require (
	github.com/blackboardkernel/bk v0.0.0
	google.golang.org/adk/v2 v2.2.0
)

replace github.com/blackboardkernel/bk => ../../..
