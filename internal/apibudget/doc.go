// Package apibudget keeps the library's surface to a size a newcomer can
// hold. Names lists the exported names of the module's library packages,
// one line per name, and Methods counts a type's methods; the package's
// tests compare the names with the checked-in names.txt (so that growth is
// a visible change in review), hold the counts to their ceilings, the
// files to their length and the packages to their layers. Its functions
// only read the tree and are safe for concurrent use.
package apibudget
