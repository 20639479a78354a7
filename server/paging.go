package server

// PageParams pages a list of definitions, at most 1000 records a page. Without limit and offset the
// list is whole, as it always was; the answer's total counts the records
// that match the list's filters, whatever the page. Exported for huma, as
// IfMatchHeader is.
type PageParams struct {
	Limit  int `query:"limit" minimum:"1" maximum:"1000" doc:"At most this many records, 1 to 1000. Absent: every record from offset on."`
	Offset int `query:"offset" minimum:"0" doc:"Records to skip first, in the list's order. Default 0."`
}

// page returns the records of the page q asks for, and their total.
func page[T any](all []T, q PageParams) ([]T, int) {
	total := len(all)
	start := min(q.Offset, total)
	end := total
	if q.Limit > 0 {
		end = min(start+q.Limit, total)
	}
	return all[start:end], total
}

// pagingDoc ends the description of a paged list operation.
const pagingDoc = " limit and offset page the list; total counts the records without paging."
