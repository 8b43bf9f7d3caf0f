"""A schedule as data: the loop-nest state, its transform steps (the history that
replays it), canonical stage names and the relations between loops."""
