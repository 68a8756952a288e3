-- +goose Up
-- A plan's resources keep their planned values (issue 22's `changes`:
-- [{field, value}], values the masker would mask already dropped), so the
-- re-detection at approval, which takes no body, uses them again.
ALTER TABLE plan_resources ADD COLUMN changes jsonb NOT NULL DEFAULT '[]'
    CHECK (jsonb_typeof(changes) = 'array');

-- +goose Down
ALTER TABLE plan_resources DROP COLUMN changes;
