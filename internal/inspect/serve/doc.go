// Package serve runs the approvals console (package inspect/console) as
// `bk serve` does: the glue between the bk command line
// ([inspect.ServeConfig]) and [console.New], kept apart because the
// console is built on the inspector's reports and the inspector cannot
// import it.
package serve
