package browser

// LayoutJS is the layout check, for the tests to run on a page that fails it.
var LayoutJS = layoutJS
