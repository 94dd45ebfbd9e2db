# examples/without-cdk/main.tf
# A scheduled singleton with Terraform: the lock bucket, a function that may use nothing but its
# own logs and the lock prefix, and an EventBridge Scheduler schedule whose event carries the
# tick's nominal time. Build the bundle and zip it first (see docs/without-cdk.md).

terraform {
  required_providers {
    # Checked with `terraform validate` on 5.100. On provider 6: runtime "nodejs24.x", and
    # `data.aws_region.current.region` in place of the deprecated `name`.
    aws = { source = "hashicorp/aws", version = "~> 5.100" }
  }
}

variable "function_name" {
  type    = string
  default = "nightly-report"
}

variable "bundle_zip" {
  description = "The zipped bundle: index.mjs (and its source map)"
  type        = string
  default     = "dist/nightly-report.zip"
}

data "aws_region" "current" {}
data "aws_caller_identity" "current" {}

resource "aws_s3_bucket" "locks" {
  bucket_prefix = "locks-"
  lifecycle {
    prevent_destroy = true # deleting lock objects would restart their fencing tokens
  }
}

resource "aws_s3_bucket_public_access_block" "locks" {
  bucket                  = aws_s3_bucket.locks.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_server_side_encryption_configuration" "locks" {
  bucket = aws_s3_bucket.locks.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "AES256"
    }
  }
}

data "aws_iam_policy_document" "lock_bucket" {
  statement {
    sid       = "TlsOnly"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [aws_s3_bucket.locks.arn, "${aws_s3_bucket.locks.arn}/*"]
    principals {
      type        = "AWS"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
  statement {
    sid       = "OnlyConditionalWritesOfLocks"
    effect    = "Deny"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.locks.arn}/locks/*"]
    principals {
      type        = "AWS"
      identifiers = ["*"]
    }
    # Two conditions in one statement are ANDed: deny only a write with neither header.
    condition {
      test     = "Null"
      variable = "s3:if-match"
      values   = ["true"]
    }
    condition {
      test     = "Null"
      variable = "s3:if-none-match"
      values   = ["true"]
    }
  }
  statement {
    sid       = "NoDeletesOfLocks"
    effect    = "Deny"
    actions   = ["s3:DeleteObject", "s3:DeleteObjectVersion"]
    resources = ["${aws_s3_bucket.locks.arn}/locks/*"]
    principals {
      type        = "AWS"
      identifiers = ["*"]
    }
  }
}

resource "aws_s3_bucket_policy" "locks" {
  bucket = aws_s3_bucket.locks.id
  policy = data.aws_iam_policy_document.lock_bucket.json
}

resource "aws_cloudwatch_log_group" "nightly_report" {
  name              = "/aws/lambda/${var.function_name}"
  retention_in_days = 30
}

data "aws_iam_policy_document" "lambda_trust" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "nightly_report" {
  statement {
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.nightly_report.arn}:*"]
  }
  statement {
    actions   = ["s3:GetObject", "s3:PutObject"]
    resources = ["${aws_s3_bucket.locks.arn}/locks/nightly-report"] # LAMBDA_SINGLETON_KEY only
  }
}

resource "aws_iam_role" "nightly_report" {
  name_prefix        = "nightly-report-"
  assume_role_policy = data.aws_iam_policy_document.lambda_trust.json
}

resource "aws_iam_role_policy" "nightly_report" {
  role   = aws_iam_role.nightly_report.id
  policy = data.aws_iam_policy_document.nightly_report.json
}

resource "aws_lambda_function" "nightly_report" {
  function_name    = var.function_name
  role             = aws_iam_role.nightly_report.arn
  runtime          = "nodejs22.x" # the newest that provider 5.100 knows
  handler          = "index.handler"
  filename         = var.bundle_zip
  source_code_hash = filebase64sha256(var.bundle_zip)
  timeout          = 300
  logging_config {
    log_format = "Text"
    log_group  = aws_cloudwatch_log_group.nightly_report.name
  }
  environment {
    variables = {
      LAMBDA_SINGLETON_STORE      = "s3"
      LAMBDA_SINGLETON_BUCKET     = aws_s3_bucket.locks.bucket
      LAMBDA_SINGLETON_KEY_PREFIX = "locks/"
      LAMBDA_SINGLETON_KEY        = "nightly-report"
      NODE_OPTIONS                = "--enable-source-maps"
    }
  }
}

data "aws_iam_policy_document" "scheduler_trust" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["scheduler.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceArn"
      values   = ["arn:aws:scheduler:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:schedule-group/default"]
    }
  }
}

data "aws_iam_policy_document" "scheduler" {
  statement {
    actions   = ["lambda:InvokeFunction"]
    resources = [aws_lambda_function.nightly_report.arn, "${aws_lambda_function.nightly_report.arn}:*"]
  }
}

resource "aws_iam_role" "scheduler" {
  name_prefix        = "nightly-report-schedule-"
  assume_role_policy = data.aws_iam_policy_document.scheduler_trust.json
}

resource "aws_iam_role_policy" "scheduler" {
  role   = aws_iam_role.scheduler.id
  policy = data.aws_iam_policy_document.scheduler.json
}

resource "aws_scheduler_schedule" "nightly" {
  name                = "nightly-report-nightly"
  schedule_expression = "cron(0 3 * * ? *)"
  flexible_time_window {
    mode = "OFF"
  }
  target {
    arn      = aws_lambda_function.nightly_report.arn
    role_arn = aws_iam_role.scheduler.arn
    # The middleware reads exactly this shape: scheduledTime is the tick's id.
    input = jsonencode({
      source        = "lambda-singleton.scheduler"
      schedule      = "nightly"
      scheduledTime = "<aws.scheduler.scheduled-time>"
    })
    retry_policy {
      maximum_retry_attempts       = 3
      maximum_event_age_in_seconds = 3600
    }
  }
}
