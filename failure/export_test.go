package failure

// Names the package's external tests use, kept unexported in the package.
var CategoryOf = categoryOf

const ClassInfrastructure = classInfrastructure
const CodeSyntax = codeSyntax

var FromHTTPStatus = fromHTTPStatus

const MaxMessage = maxMessage

var StatusForHTTP = statusForHTTP
var Categories = allCategories
var Statuses = allStatuses
