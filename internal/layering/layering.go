// Package layering holds the test that keeps DESIGN.md's dependency arrows
// true: it reads the arrows from DESIGN.md and the packages' imports from
// `go list`, and fails when they differ, so neither the doc nor the code
// can drift from the other.
//
// An arrow line `a, b ← x, y` says that a and b each import exactly the
// module's packages x and y (test files aside); a line naming packages with
// no arrow says they import none of the module's packages. A right side
// that is not a list of packages ("model and below", "everything") is not
// checked. Text in parentheses is a comment; ";" separates two statements
// on one line. Every package of the module outside internal/ and cmd/ must
// be named on the left of some line.
package layering
