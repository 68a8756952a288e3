// Package layout holds no code of the product: its tests keep the module's
// shape. They hold the allowed import edges in one table (imports_test.go,
// shown the same in docs/architecture.md), the size limits of files and
// functions (sizes_test.go), and the names the service's
// users code against — environment variables, metric names, log keys and
// wire words — compared with a list committed in testdata before issue 20's
// moves (vocabulary_test.go), so moving code cannot rename what operators
// and the app team depend on.
package layout
