// Package docs holds only tests of the documentation: README.md and the
// pages under docs/. They check that every relative link resolves, that
// every Go snippet is the source of a function that compiles, and that
// the generated or measured parts of the pages match the code.
package docs
