"""HeadlessExecute: nbgrader's Execute preprocessor without the lost wake-ups that stall nbclient on the
notebooks' Output widgets (bwlab.tools.headless). nbgrader finds it by its dotted name,
`bwlab.tools.classroom.HeadlessExecute` (course.settings); the package reaches it through its lazy map,
so nbgrader, which takes seconds to import, loads only when a course is graded."""
from nbgrader.preprocessors import Execute

from ..headless import headless

HeadlessExecute = headless(Execute)
