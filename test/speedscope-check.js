// speedscope-check.js SCHEMA FILE: validates FILE against speedscope's
// file format schema with ajv; prints "valid" or the errors, one line.
"use strict";
const Ajv = require("ajv");
const fs = require("fs");
const schema = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const data = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const ajv = new Ajv({ strict: false, allErrors: true });
console.log(ajv.validate(schema, data) ? "valid" : JSON.stringify(ajv.errors));
