; Every call, by name or through a member: what a function calls (scan.work).
(call_expression
  function: (_) @call.fn) @call
